package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/host/jail"
	"github.com/dirtywork/dirtywork/transcript"
)

// hostPreflight is preflight step 6 for --sandbox none: the jail's layers
// are tried out on this system, and one that cannot be set up refuses the
// run (exit 2, each missing layer with its reason and fix) unless
// DIRTYWORK_ALLOW_UNCONFINED=1, which runs without the missing layers and
// says so in run_start.sandbox: never a silent downgrade.
func (r *Runner) hostPreflight(ctx context.Context, p *prepared) error {
	var err error
	if p.hostMemory, err = sizeBytes("memory", p.spec.Docker.Memory); err != nil {
		return refuse("", "%v", err)
	}
	if p.hostTmp, err = sizeBytes("tmp-size", p.spec.Docker.TmpSize); err != nil {
		return refuse("", "%v", err)
	}
	report := probeJail(ctx)
	p.jailProbe = &report
	if err := report.Err(); err != nil && r.getenv(AllowUnconfinedEnv) != "1" {
		return &PreflightError{Msg: err.Error(), Hint: hostJailHint, Err: err}
	}
	return nil
}

// sizeBytes parses a size flag's value with sandbox.ParseSize (docker's
// forms: 512m, 1.5g, 4gb); "" (a Spec built without the flag) is 0, the
// jail's default.
func sizeBytes(flag, v string) (int64, error) {
	if strings.TrimSpace(v) == "" {
		return 0, nil
	}
	n, err := sandbox.ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", flag, err)
	}
	return n, nil
}

// probeJail is jail.Probe, kept across runs for the boot: building a jail
// that runs nothing costs tens of milliseconds, which every run's first
// model request would wait for. A report is reused only while the boot,
// the kernel, the user, this binary and the user-namespace settings are
// the ones it was made under (probeKey), and only a report of a whole
// jail is kept: a refusal is always fresh. A jail that then cannot start
// after all ends its run as sandbox_error, never silently unconfined.
func probeJail(ctx context.Context) jail.Report {
	file, key := probeCacheFile(), probeKey()
	if file != "" {
		if data, err := os.ReadFile(file); err == nil {
			var c probeCache
			if json.Unmarshal(data, &c) == nil && c.Key == key && c.Report.Err() == nil && len(c.Report.Layers) > 0 {
				return c.Report
			}
		}
	}
	report := jail.Probe(ctx)
	if file != "" && report.Err() == nil && len(report.Layers) > 0 {
		writeProbeCache(file, probeCache{Key: key, Report: report})
	}
	return report
}

// probeCache is the cache file's content.
type probeCache struct {
	Key    string      `json:"key"`
	Report jail.Report `json:"report"`
}

// probeCacheFile is where the probe's report is kept: beside the runs.
func probeCacheFile() string {
	home, err := transcript.Home()
	if err != nil {
		return ""
	}
	return filepath.Join(home, "cache", "jail-probe.json")
}

// probeKey identifies what the probe's answer depends on.
func probeKey() string {
	h := sha256.New()
	for _, f := range []string{
		"/proc/sys/kernel/random/boot_id", "/proc/sys/kernel/osrelease", "/proc/self/cgroup",
		"/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces",
		"/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
	} {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(h, "%s=%s\n", f, data)
	}
	fmt.Fprintf(h, "uid=%d gid=%d\n", os.Geteuid(), os.Getegid())
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			fmt.Fprintf(h, "exe=%s %d %d\n", exe, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeProbeCache replaces the cache file atomically; failing to is only
// a slower next run.
func writeProbeCache(file string, c probeCache) {
	data, err := json.Marshal(c)
	if err != nil || os.MkdirAll(filepath.Dir(file), 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".jail-probe-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), file) != nil {
		_ = os.Remove(tmp.Name())
	}
}
