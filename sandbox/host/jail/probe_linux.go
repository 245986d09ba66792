package jail

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// fixes are what an operator can do about a layer that is missing.
var fixes = map[string]string{
	LayerUserNS: "allow user namespaces (sysctl user.max_user_namespaces above 0, kernel.unprivileged_userns_clone=1, " +
		"kernel.apparmor_restrict_unprivileged_userns=0; inside a container, run it with --privileged), or use --sandbox docker",
	LayerRoot: "the jail must be able to mount a fresh /proc and tmpfs (inside a container: " +
		"--security-opt systempaths=unconfined), or use --sandbox docker",
	LayerNetwork:  "the jail must be able to bring up lo in its own network namespace, or use --sandbox docker",
	LayerIDMap:    "put the repository on a file system with idmapped mounts (ext4, xfs, btrfs, tmpfs on Linux 6.3 or later), or set DIRTYWORK_ALLOW_UNCONFINED=1",
	LayerLandlock: "boot a kernel with Landlock enabled (CONFIG_SECURITY_LANDLOCK, landlock in lsm=), or set DIRTYWORK_ALLOW_UNCONFINED=1",
	LayerSeccomp:  "use a kernel with seccomp filters (CONFIG_SECCOMP_FILTER), or set DIRTYWORK_ALLOW_UNCONFINED=1",
}

// essential layers are the jail itself.
var essential = map[string]bool{LayerUserNS: true, LayerRoot: true, LayerNetwork: true}

// probeLayers builds a jail that runs nothing, with every layer it can
// have (a failing optional layer is recorded, not fatal), and one
// writable mount of a temporary directory so that idmapping is tried.
func probeLayers(ctx context.Context, dirs []string) Report {
	order := []string{LayerUserNS, LayerRoot, LayerNetwork, LayerIDMap, LayerLandlock, LayerSeccomp, LayerPids, LayerMemory, LayerCPU}
	cfg := Config{AllowUnconfined: true}
	dir, err := os.MkdirTemp("", "dirtywork-probe-")
	if err == nil {
		defer func() { _ = os.RemoveAll(dir) }() // an empty directory of ours
		cfg.Mounts = []Mount{{Source: dir, Target: "/probe"}}
	}
	for i, d := range dirs {
		// A fresh directory on d's file system, rather than d itself: d may
		// have mounts beneath it (/tmp often has), which a writable bind
		// leaves out, and which an unprivileged jail cannot leave out (in
		// its user namespace they are locked to the mount above them), so
		// binding d would fail for a reason no run meets.
		src := d
		if sub, err := os.MkdirTemp(d, ".dirtywork-probe-"); err == nil {
			defer func() { _ = os.Remove(sub) }() // empty, ours
			src = sub
		}
		cfg.Mounts = append(cfg.Mounts, Mount{Source: src, Target: fmt.Sprintf("/probe-%d", i)})
	}
	_, info, err := start(ctx, cfg, true)
	var r Report
	if err != nil {
		layer := LayerRoot
		var se *SetupError
		if errors.As(err, &se) && se.Layer != "" {
			layer = se.Layer
		}
		for _, name := range order {
			st := LayerStatus{Name: name, Essential: essential[name]}
			if name == layer {
				st.Problem, st.Fix = err.Error(), fixes[name]
			} else {
				st.Problem = "not tried: " + layer + " failed first"
			}
			r.Layers = append(r.Layers, st)
		}
		return r
	}
	off := map[string]string{}
	for _, o := range info.Off {
		if name, why, ok := strings.Cut(o, ": "); ok {
			off[name] = why
		}
	}
	status := func(name, detail string) LayerStatus {
		st := LayerStatus{Name: name, Essential: essential[name], OK: true, Detail: detail}
		if why, ok := off[name]; ok {
			st.OK, st.Detail, st.Problem, st.Fix = false, "", why, fixes[name]
		}
		return st
	}
	uid := fmt.Sprintf("uid %d inside is %d on the host", info.UserNS.UID.Inside, info.UserNS.UID.Host)
	r.Layers = append(r.Layers,
		status(LayerUserNS, uid),
		status(LayerRoot, info.Root.Kind),
		status(LayerNetwork, "own namespace, only lo"),
	)
	if os.Geteuid() == 0 {
		r.Layers = append(r.Layers, status(LayerIDMap, "writable mounts idmapped to the operator"))
	}
	r.Layers = append(r.Layers,
		status(LayerLandlock, fmt.Sprintf("ABI %d", info.Landlock.ABI)),
		status(LayerSeccomp, "profile "+info.Seccomp.Profile),
		limitStatus(LayerPids, info.Limits.Pids, info.Limits.Reason),
		limitStatus(LayerMemory, info.Limits.Memory, info.Limits.Reason),
		cpuStatus(info.Limits.CPU),
	)
	return r
}

// cpuStatus reports the CPU cap: niceness is the fallback, not a failure,
// but the report says it caps nothing and why no controller could be had.
func cpuStatus(c CPULimit) LayerStatus {
	st := LayerStatus{Name: LayerCPU, OK: true, Detail: c.Mechanism}
	switch c.Mechanism {
	case "nice":
		st.Detail = fmt.Sprintf("nice %d, no cap (no cpu controller: %s)", Nice, c.Reason)
	case "cgroup-v1", "cgroup-v2":
		st.Detail = fmt.Sprintf("%s (%d µs of CPU time in every %d µs)", c.Mechanism, c.QuotaMicros, c.PeriodMicros)
	}
	return st
}

// limitStatus reports a limit: rlimits are the fallback, not a failure,
// but the report says why no cgroup could be had.
func limitStatus(name string, l Limit, reason string) LayerStatus {
	st := LayerStatus{Name: name, OK: true, Detail: l.Mechanism}
	if l.Mechanism == "rlimit" {
		st.Detail = "rlimit (per process: " + reason + ")"
	}
	return st
}
