package transcript

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// LegacyStartSlack is how much later than its record's `started` a
// process may seem to have started and still count as the run's: the
// record is written after the process starts, so only a clock stepped
// forward in between makes it look later.
const LegacyStartSlack = time.Minute

// clockTicks is USER_HZ, the unit of the start time in /proc/<pid>/stat:
// 100 on every architecture Go builds Linux for.
const clockTicks = 100

// HasLivenessFile reports whether the run in runDir has a liveness lock
// file: every run of this version has one from its first moment; a run
// dirtywork 0.9.1 wrote has none.
func HasLivenessFile(runDir string) bool {
	_, err := os.Lstat(filepath.Join(runDir, livenessName))
	return err == nil
}

// LegacyAlive reports whether the process a run.json of dirtywork 0.9.1
// names (its host_pid; that version had no liveness lock) is still that
// run's. A bare signal 0 (D-4) is fooled by a reused pid, so the process
// must also look like the run's:
//
//   - it exists (signal 0 succeeds or is refused with EPERM);
//   - its command line names dirtywork (an argument whose base name starts
//     with "dirtywork": `python3 -m dirtywork …`, the `dirtywork` script
//     pipx installs, bin/dirtywork's `python3 -m dirtywork`);
//   - it started no later than LegacyStartSlack after the record's
//     `started` (an RFC 3339 time; when it cannot be read, this test is
//     skipped): a process that started after the run did is not the run's.
//
// Where /proc cannot answer (no procfs, or another user's process hidden
// from this one), the process counts as the run's: a run wrongly thought
// dead could be cleaned under its feet, one wrongly thought alive is only
// left alone.
func LegacyAlive(pid int64, started string) bool {
	if pid <= 0 || pid > math.MaxInt32 {
		return false
	}
	if err := unix.Kill(int(pid), 0); err != nil && !errors.Is(err, unix.EPERM) {
		return false
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return true // no procfs: signal 0 is all there is to go by
	}
	proc := "/proc/" + strconv.FormatInt(pid, 10)
	cmdline, err := os.ReadFile(proc + "/cmdline")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false // it ended since
	case err != nil:
		return true // hidden from us: cannot tell
	case len(cmdline) == 0:
		return false // a zombie (or a kernel thread): no program runs there
	case !namesDirtywork(cmdline):
		return false
	}
	if want, err := time.Parse(time.RFC3339Nano, started); err == nil {
		if began, err := processStart(proc); err == nil && began.After(want.Add(LegacyStartSlack)) {
			return false // the pid was reused after the run started
		}
	}
	return true
}

// namesDirtywork reports a NUL-separated command line with an argument
// whose base name starts with "dirtywork".
func namesDirtywork(cmdline []byte) bool {
	for arg := range bytes.SplitSeq(bytes.TrimRight(cmdline, "\x00"), []byte{0}) {
		if strings.HasPrefix(strings.ToLower(filepath.Base(string(arg))), "dirtywork") {
			return true
		}
	}
	return false
}

// processStart is when the process whose /proc directory is proc started,
// from its stat (clock ticks since boot) and the boot time in /proc/stat.
func processStart(proc string) (time.Time, error) {
	stat, err := os.ReadFile(proc + "/stat")
	if err != nil {
		return time.Time{}, err
	}
	// The command name (field 2) is in parentheses and may hold anything,
	// spaces and parentheses included: fields are counted after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return time.Time{}, fmt.Errorf("%s/stat: no command name", proc)
	}
	fields := strings.Fields(string(stat[i+1:]))
	const startTime = 22 - 3 // field 22, counted from field 3 (the state)
	if len(fields) <= startTime {
		return time.Time{}, fmt.Errorf("%s/stat: %d fields", proc, len(fields)+2)
	}
	ticks, err := strconv.ParseInt(fields[startTime], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s/stat: start time: %w", proc, err)
	}
	boot, err := bootTime()
	if err != nil {
		return time.Time{}, err
	}
	return boot.Add(time.Duration(ticks) * (time.Second / clockTicks)), nil
}

// bootTime is the btime line of /proc/stat.
func bootTime() (time.Time, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("/proc/stat: btime: %w", err)
			}
			return time.Unix(secs, 0), nil
		}
	}
	return time.Time{}, errors.New("/proc/stat: no btime")
}
