package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/egress"
	"github.com/dirtywork/dirtywork/sandbox/host/jail"
	"github.com/dirtywork/dirtywork/sandbox/host/seatbelt"
)

func TestSeatbeltReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe := filepath.Join(dir, "sandbox-exec")
	plain := filepath.Join(dir, "not-executable")
	for path, mode := range map[string]os.FileMode{exe: 0o755, plain: 0o644} {
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	r := SeatbeltReport(exe)
	if err := r.Err(); err != nil {
		t.Fatalf("found sandbox-exec: %v", err)
	}
	if l, ok := r.Layer(SeatbeltLayer); !ok || !l.OK || l.Detail != exe {
		t.Errorf("layer %+v", l)
	}
	if _, sb := jailerFor(r).(seatbeltJailer); !sb {
		t.Errorf("a Seatbelt report makes %T", jailerFor(r))
	}
	if _, real := jailerFor(jail.Report{Layers: []jail.LayerStatus{{Name: jail.LayerUserNS, OK: true}}}).(realJailer); !real {
		t.Error("a jail's report does not make the jail")
	}
	for _, path := range []string{filepath.Join(dir, "missing"), plain, dir} {
		r := SeatbeltReport(path)
		var ue *jail.UnavailableError
		if err := r.Err(); err == nil || !strings.Contains(err.Error(), SeatbeltLayer) {
			t.Errorf("%s: err %v", path, err)
		} else if !errors.As(err, &ue) || !ue.Essential() {
			t.Errorf("%s: a missing sandbox-exec is not essential: %v", path, err)
		}
	}
}

// fakeSandboxExec is a stand-in for sandbox-exec on systems without it:
// it records its arguments (NUL-separated) in record and executes what
// follows "--", unconfined. It tests what host mode hands sandbox-exec,
// not Seatbelt.
func fakeSandboxExec(t *testing.T) (path, record string) {
	t.Helper()
	dir := t.TempDir()
	path, record = filepath.Join(dir, "sandbox-exec"), filepath.Join(dir, "args")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > '" + record + "'\n" +
		"while [ \"$#\" -gt 0 ] && [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, record
}

// recorded are the arguments fakeSandboxExec was given.
func recorded(t *testing.T, record string) []string {
	t.Helper()
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
}

// seatbeltArgs splits sandbox-exec's arguments into the profile, its
// parameters and the command.
func seatbeltArgs(t *testing.T, args []string) (profile string, params map[string]string, argv []string) {
	t.Helper()
	if len(args) < 3 || args[0] != "-p" {
		t.Fatalf("sandbox-exec arguments %q", args)
	}
	profile, params = args[1], map[string]string{}
	for i, a := range args[2:] {
		if a == "--" {
			return profile, params, args[3+i:]
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(a, "-D"), "=")
		if !ok || !strings.HasPrefix(a, "-D") {
			t.Fatalf("argument %q is not a parameter", a)
		}
		params[k] = v
	}
	t.Fatalf("no -- in %q", args)
	return "", nil, nil
}

// TestSeatbeltJailerRunsTheToolServerUnderTheProfile opens a workspace
// the way macOS does (the probe reports Seatbelt) with a stand-in
// sandbox-exec: the tool server is started through it with the run's
// profile, and the worker's git, TMPDIR and HOME are the run's.
func TestSeatbeltJailerRunsTheToolServerUnderTheProfile(t *testing.T) {
	t.Parallel()
	fake, record := fakeSandboxExec(t)
	r := newTestRepo(t)
	cfg := r.config()
	cfg.jailer = nil
	report := SeatbeltReport(fake)
	cfg.Probe = &report
	w := open(t, cfg)
	info := w.Info()
	if info.Layers["jail"] != "seatbelt" || info.Network != "none" || info.PidsLimit != 0 || info.Memory != 0 || info.CPUs != 0 {
		t.Errorf("Info: %+v", info)
	}
	if info.ToolchainPrivate != privateCovered {
		t.Errorf("toolchain privacy %q: the worker is the operator", info.ToolchainPrivate)
	}
	res := bash(t, w, `printf '%s\n' "$TMPDIR" "$HOME" "$(git rev-parse --git-dir)" && git log --format=%H -1 && echo x > made.txt`)
	lines := strings.Split(strings.TrimSpace(res.Output), "\n")
	if res.ExitCode != 0 || len(lines) != 4 || lines[0] != w.private.tmp || lines[1] != r.worktree ||
		lines[2] != w.private.gitDir || lines[3] != r.base {
		t.Fatalf("bash under the stand-in: exit %d: %q", res.ExitCode, res.Output)
	}

	profile, params, argv := seatbeltArgs(t, recorded(t, record))
	if !strings.HasPrefix(profile, "(version 1)\n(deny default)\n") {
		t.Errorf("profile starts %q", profile[:min(len(profile), 40)])
	}
	if strings.Contains(profile, r.worktree) || strings.Contains(profile, w.private.dir) {
		t.Error("a run's path is written into the profile")
	}
	if len(argv) < 2 || argv[1] != toolboxArg || !slices.Contains(argv, "-root") {
		t.Errorf("command %q", argv)
	}
	if params["WORKTREE"] != seatbelt.Canonical(r.worktree) {
		t.Errorf("WORKTREE=%q", params["WORKTREE"])
	}
	values := func(prefix string) []string {
		var out []string
		for k, v := range params {
			if strings.HasPrefix(k, prefix) {
				out = append(out, v)
			}
		}
		return out
	}
	for _, want := range []string{w.private.gitDir, w.private.tmp} {
		if !slices.Contains(values("WRITE_"), seatbelt.Canonical(want)) {
			t.Errorf("%s is not writable: %q", want, values("WRITE_"))
		}
	}
	if !slices.Contains(values("READ_"), seatbelt.Canonical(filepath.Dir(w.private.objects))) {
		t.Errorf("the base objects are not read-only: %q", values("READ_"))
	}
	if !slices.Contains(values("HIDDEN_"), seatbelt.Canonical(filepath.Join(r.worktree, ".git"))) {
		t.Errorf("the worktree's .git is not hidden: %q", values("HIDDEN_"))
	}
	if strings.Contains(profile, "network-outbound") {
		t.Error("a run without network may connect")
	}
	if got, err := os.ReadFile(filepath.Join(r.worktree, "made.txt")); err != nil || string(got) != "x\n" {
		t.Errorf("a file bash made: %q, %v", got, err)
	}
}

// TestSeatbeltJailerProxyOnLoopback: with --allow-network under Seatbelt
// the proxy listens on a port of the host's loopback, the proxy variables
// name it, the profile allows that port alone, and what answers there is
// the allowlisting proxy.
func TestSeatbeltJailerProxyOnLoopback(t *testing.T) {
	t.Parallel()
	fake, record := fakeSandboxExec(t)
	r := newTestRepo(t)
	cfg := r.config()
	cfg.jailer = nil
	report := SeatbeltReport(fake)
	cfg.Probe = &report
	cfg.Network = true
	allow, err := egress.ParseRules("registry.example:443")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Allow = allow
	w := open(t, cfg)
	if info := w.Info(); info.Network != "proxy" || info.Egress == nil {
		t.Fatalf("Info: network %q, egress %+v", info.Network, info.Egress)
	}
	port := w.egress.port
	if port == 0 || w.egress.addr != fmt.Sprintf("127.0.0.1:%d", port) {
		t.Fatalf("the proxy listens at %q (port %d)", w.egress.addr, port)
	}
	res := bash(t, w, `echo "$HTTPS_PROXY"; curl -sS -o /dev/null -w '%{http_code}' --max-time 20 http://not-allowed.example/`)
	want := fmt.Sprintf("http://127.0.0.1:%d\n403", port)
	if strings.TrimSpace(res.Output) != want {
		t.Errorf("through the proxy: %q, want %q", res.Output, want)
	}
	profile, _, _ := seatbeltArgs(t, recorded(t, record))
	if n := strings.Count(profile, "(allow network-outbound"); n != 1 ||
		!strings.Contains(profile, fmt.Sprintf(`(allow network-outbound (remote ip "localhost:%d"))`, port)) {
		t.Errorf("the profile's network rules are not the proxy's port alone:\n%s", profile)
	}
	// The commands reach the proxy itself: the tool server forwards
	// nothing.
	if slices.Contains(recorded(t, record), "-egress-listen") {
		t.Error("the tool server was made a forwarder")
	}
}

// TestSeatbeltPolicyOfTheRun holds the policy made from a run's jail spec
// to what the Linux jail shows: the worktree and the worker's repository
// written, the base objects and the binary read, the worktree's own .git
// and the operator's home out of reach.
func TestSeatbeltPolicyOfTheRun(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	cfg := r.config()
	cfg.jailer = seatbeltJailer{path: "/nonexistent/sandbox-exec"}
	secret := filepath.Join(r.home, ".ssh", "id_ed25519")
	writeFile(t, secret, "key")
	w, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	spec := w.jailSpec(w.operatorEnvMap(), operatorHome(cfg.Home, w.operatorEnvMap()), "")
	p := seatbeltPolicy(spec)
	for path, want := range map[string]seatbelt.Access{
		filepath.Join(r.worktree, "src", "lib.go"):         seatbelt.Write,
		filepath.Join(r.worktree, ".git"):                  seatbelt.Deny,
		filepath.Join(w.private.gitDir, "HEAD"):            seatbelt.Write,
		filepath.Join(w.private.tmp, "x"):                  seatbelt.Write,
		filepath.Join(w.private.objects, "pack"):           seatbelt.Read,
		w.private.gitfile:                                  seatbelt.Deny,
		spec.Argv[0]:                                       seatbelt.Read,
		secret:                                             seatbelt.Deny,
		filepath.Join(r.common, "config"):                  seatbelt.Deny,
		filepath.Join(r.admin, "HEAD"):                     seatbelt.Deny,
		filepath.Join(r.repo, "tracked.txt"):               seatbelt.Deny,
		filepath.Join(filepath.Dir(w.private.dir), "else"): seatbelt.Deny,
	} {
		if got := p.Decide(path); got != want {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
	if _, err := p.Profile(); err != nil {
		t.Fatal(err)
	}
}
