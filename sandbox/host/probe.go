package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"syscall"

	"github.com/dirtywork/dirtywork/sandbox/host/jail"
)

// ProbeJail is jail.Probe, kept in file ("": not kept) across runs for the
// boot: building a jail that runs nothing costs tens of milliseconds,
// which every run's first model request would wait for. A report is reused only while the boot,
// the kernel, the user, this binary and the user-namespace settings are
// the ones it was made under (probeKey), and only a report of a whole
// jail is kept: a refusal is always fresh. A jail that then cannot start
// after all ends its run as sandbox_error, never silently unconfined.
//
// dirs are the directories the jail will bind writable (the repository's,
// the run's): the probe tries idmapped mounts on their file systems, so a
// repository on one that cannot idmap is refused here, not at the start.
//
// On macOS the report is Seatbelt's (SeatbeltReport): found or not, at
// the cost of a stat, never kept.
func ProbeJail(ctx context.Context, file string, dirs ...string) jail.Report {
	if r, ok := platformProbe(); ok {
		return r
	}
	key := probeKey(dirs)
	if file != "" {
		if data, err := os.ReadFile(file); err == nil {
			var c probeCache
			if json.Unmarshal(data, &c) == nil && c.Key == key && c.Report.Err() == nil && len(c.Report.Layers) > 0 {
				return c.Report
			}
		}
	}
	report := jail.Probe(ctx, dirs...)
	if report.Err() != nil && ctx.Err() == nil {
		// Once more before a refusal: building a jail copies mounts, which
		// can fail while another process changes them at the same moment.
		report = jail.Probe(ctx, dirs...)
	}
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

// probeKey identifies what the probe's answer depends on.
func probeKey(dirs []string) string {
	h := sha256.New()
	for _, d := range dirs {
		// The file system, not the path: idmapping is a property of it.
		var st syscall.Stat_t
		if err := syscall.Stat(d, &st); err == nil {
			fmt.Fprintf(h, "dir=%v\n", st.Dev)
		} else {
			fmt.Fprintf(h, "dir=%s?\n", d)
		}
	}
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

// writeProbeCache replaces the cache file; failing to is only a slower
// next run.
func writeProbeCache(file string, c probeCache) {
	if data, err := json.Marshal(c); err == nil {
		writeAtomic(file, data)
	}
}
