package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dirtywork/dirtywork/sandbox/host/jail"
	"github.com/dirtywork/dirtywork/sandbox/host/seatbelt"
)

// SeatbeltLayer names Seatbelt in a probe's report: host mode's
// confinement on macOS, where there is no Linux jail.
const SeatbeltLayer = "seatbelt"

// SeatbeltReport is the probe's answer where Seatbelt confines host mode:
// one essential layer, in place when sandbox-exec is at path (its Detail
// is then path, which the jailer runs).
func SeatbeltReport(path string) jail.Report {
	l := jail.LayerStatus{Name: SeatbeltLayer, Essential: true}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		l.Problem = fmt.Sprintf("no sandbox-exec at %s: %v", path, err)
		l.Fix = "sandbox-exec ships with macOS at " + seatbelt.DefaultPath + "; without it use the docker sandbox"
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		l.Problem = path + " is not an executable file"
		l.Fix = "restore " + seatbelt.DefaultPath + " (it ships with macOS), or use the docker sandbox"
	default:
		l.OK, l.Detail = true, path
	}
	return jail.Report{Layers: []jail.LayerStatus{l}}
}

// jailerFor is the jailer a whole report stands for: Seatbelt where the
// report is Seatbelt's, else the Linux jail.
func jailerFor(r jail.Report) jailer {
	if l, ok := r.Layer(SeatbeltLayer); ok && l.OK {
		return seatbeltJailer{path: l.Detail}
	}
	return realJailer{report: r}
}

// seatbeltJailer starts the tool server under sandbox-exec, with the
// profile package seatbelt generates for the run: everything it starts
// keeps the profile. There is no mount namespace, so the commands see the
// host's paths (hostView): the worktree's own .git is hidden rather than
// covered, the worker's git is pointed at its repository by GIT_DIR, and
// TMPDIR is a directory of the run's. Nothing caps the run's processes,
// memory or CPU.
type seatbeltJailer struct {
	// path is sandbox-exec's.
	path string
}

// Layers says what the run is confined by.
func (j seatbeltJailer) Layers() map[string]any {
	return map[string]any{
		"jail":        "seatbelt",
		SeatbeltLayer: map[string]any{"ok": true, "detail": j.path},
		"limits":      "none: Seatbelt caps no processes, memory or CPU",
	}
}

func (j seatbeltJailer) Start(ctx context.Context, spec jailSpec) (jailProc, error) {
	if len(spec.Argv) == 0 {
		return nil, fmt.Errorf("start the tool server: no command")
	}
	policy := seatbeltPolicy(spec)
	profile, err := policy.Profile()
	if err != nil {
		return nil, fmt.Errorf("make the Seatbelt profile: %w", err)
	}
	run := spec
	run.Argv = profile.Command(j.path, spec.Argv)
	p, err := childJailer{}.Start(ctx, run)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(profile.Text))
	info := map[string]any{
		"jail": "seatbelt", "sandbox_exec": j.path, "profile_sha256": hex.EncodeToString(sum[:]),
		"writable": append([]string{policy.Worktree}, policy.Writable...), "read_only": policy.ReadOnly,
		"hidden": policy.Hidden, "network": "none",
	}
	if policy.ProxyPort != 0 {
		info["network"] = fmt.Sprintf("proxy on localhost:%d", policy.ProxyPort)
	}
	return seatbeltProc{p.(*childProc), info}, nil
}

// seatbeltProc is a tool server under sandbox-exec: a plain child (see
// childProc) that says what confines it.
type seatbeltProc struct {
	*childProc
	info map[string]any
}

func (p seatbeltProc) Info() any { return p.info }

// seatbeltPolicy is what the profile of spec's run allows: the worktree
// and the writable binds written, the other binds, the read-only and
// unmapped paths read, and what a bind covers (the worktree's .git)
// hidden with spec's hidden paths, as the Linux jail shows them.
func seatbeltPolicy(spec jailSpec) seatbelt.Policy {
	p := seatbelt.Policy{Worktree: spec.Worktree, Home: spec.Home, ProxyPort: spec.ProxyPort}
	if spec.Scratch != "" {
		p.Writable = append(p.Writable, spec.Scratch)
	}
	for _, b := range spec.Binds {
		switch {
		case b.Over != "":
			// The Linux jail shows a stand-in here (the worker's gitfile
			// over the host's); without mounts, what the host has there
			// stays out of reach.
			p.Hidden = append(p.Hidden, b.Path)
		case b.Writable:
			p.Writable = append(p.Writable, b.Path)
		default:
			p.ReadOnly = append(p.ReadOnly, b.Path)
		}
	}
	p.ReadOnly = append(p.ReadOnly, spec.ReadOnly...)
	p.ReadOnly = append(p.ReadOnly, spec.Unmapped...)
	if dev := xcodeDeveloperDir(); dev != "" {
		p.ReadOnly = append(p.ReadOnly, dev)
	}
	p.Hidden = append(p.Hidden, spec.Hidden...)
	return p
}

// xcodeLink says which developer directory xcrun uses: the shim behind
// /usr/bin/git, cc and make runs the tool from there.
const xcodeLink = "/private/var/db/xcode_select_link"

// xcodeDeveloperDir is the selected developer directory, resolved, or ""
// when none is selected (or this is not macOS). The command line tools'
// lies under /Library, which the profile reads anyway; Xcode's own lies
// in /Applications, which it does not.
func xcodeDeveloperDir() string {
	dir, err := filepath.EvalSymlinks(xcodeLink)
	if err != nil || !filepath.IsAbs(dir) {
		return ""
	}
	return dir
}

// hostView reports whether j's commands see the host's paths as they
// are (no mount namespace): the worker's git is then pointed at its
// repository by the environment, and TMPDIR at a directory of the run's.
func hostView(j jailer) bool {
	switch j.(type) {
	case childJailer, seatbeltJailer:
		return true
	}
	return false
}

// loopbackEgress reports whether j's commands reach the egress proxy on
// the host's loopback (a port the profile allows) rather than through a
// socket bound into a network namespace of their own.
func loopbackEgress(j jailer) bool {
	_, ok := j.(seatbeltJailer)
	return ok
}
