package host

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/host/jail"
)

// TestInfoReportsTheLimits: run_start's sandbox object gives the CPU cap
// asked for, the descriptor and pty limits, and the jail that starts holds
// to the same.
func TestInfoReportsTheLimits(t *testing.T) {
	r := newTestRepo(t)
	cfg := r.config()
	cfg.CPUs, cfg.PidsLimit = 0.5, 300
	w := open(t, cfg)
	info := w.Info()
	if info.CPUs != 0.5 || info.PidsLimit != 300 || info.Nofile != jail.NofileLimit(300) || info.Ptys != jail.MaxPtys {
		t.Errorf("info cpus %v pids %d nofile %d ptys %d", info.CPUs, info.PidsLimit, info.Nofile, info.Ptys)
	}
	if defaults := open(t, newTestRepo(t).config()).Info(); defaults.CPUs != jail.DefaultCPUs {
		t.Errorf("default cpus %v", defaults.CPUs)
	}
	ji, ok := w.proc.Info().(jail.Info)
	if !ok {
		t.Skip("no jail here: nothing started holds to the limits")
	}
	if ji.Limits.CPU.CPUs != 0.5 || ji.Limits.Nofile.Max != int64(info.Nofile) || ji.Limits.Ptys.Max != jail.MaxPtys {
		t.Errorf("the jail's limits %+v", ji.Limits)
	}
	if strings.HasPrefix(ji.Limits.CPU.Mechanism, "cgroup-") && ji.Limits.CPU.QuotaMicros != 50000 {
		t.Errorf("the jail's CPU quota %+v", ji.Limits.CPU)
	}
}

// TestNoSetIDFileReachesTheHost: whatever the worker does in the worktree
// and in its private git dir, no setuid or setgid file lands there on the
// host.
func TestNoSetIDFileReachesTheHost(t *testing.T) {
	requireJail(t)
	r := newTestRepo(t)
	w := open(t, r.config())
	attempts := `touch a b && chmod 4755 a; chmod g+s b; install -m 6755 /bin/true c; mkdir -m 2775 d
python3 -c "import os; os.close(os.open('e', os.O_CREAT|os.O_WRONLY, 0o4755))"`
	for _, dir := range []string{".", `"$(git rev-parse --absolute-git-dir)"`} {
		run(t, w, "cd "+dir+" && { "+attempts+"; } 2>/dev/null; true")
	}
	for _, dir := range []string{w.worktree, w.private.gitDir} {
		err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Mode&(syscall.S_ISUID|syscall.S_ISGID) != 0 {
				t.Errorf("%s has mode %o on the host", p, st.Mode)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The attempts did run: the files made before a mode was set are
	// there, without the bits (a mkdir or an open with them fails whole).
	for _, name := range []string{"a", "b", "c"} {
		if !exists(filepath.Join(w.worktree, name)) {
			t.Errorf("%s was not made: %s", name, fmt.Sprint(os.ReadDir(w.worktree)))
		}
	}
}
