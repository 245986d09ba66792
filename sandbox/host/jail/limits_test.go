//go:build linux

package jail

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// exhaust is a helper: it opens descriptors until it cannot, tries to
// raise its descriptor limit, then opens pseudo-terminals until it cannot,
// and prints what it got ("fds N", "fds_err ERRNO", ...).
func exhaust() {
	var fds []int
	var err error
	for len(fds) < 1<<20 {
		fd, e := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if e != nil {
			err = e
			break
		}
		fds = append(fds, fd)
	}
	fmt.Printf("fds %d\nfds_err %s\n", len(fds), errName(err))
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
	var lim unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
	fmt.Printf("nofile %d/%d\n", lim.Cur, lim.Max)
	fmt.Printf("raise %s\n", errName(unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: lim.Max + 1, Max: lim.Max + 1})))
	n := 0
	err = nil
	for n < 4096 {
		fd, e := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if e != nil {
			err = e
			break
		}
		n++
		_ = fd // held open: a closed pty is free again
	}
	fmt.Printf("ptys %d\nptys_err %s\n", n, errName(err))
}

// TestEscapeTableLimits: a program that opens descriptors without end
// stops at the jail's RLIMIT_NOFILE, which it cannot raise, and one that
// opens pseudo-terminals without end stops at the devpts's max; both
// limits are reported.
func TestEscapeTableLimits(t *testing.T) {
	got := helper(t, Config{}, "exhaust")
	want := NofileLimit(DefaultPidsLimit)
	fds, err := strconv.Atoi(got["fds"])
	// The helper holds its standard streams and a few of the runtime's.
	if err != nil || fds >= want || fds < want-16 || got["fds_err"] != "EMFILE" {
		t.Errorf("opened %q descriptors (%s), want EMFILE just short of %d", got["fds"], got["fds_err"], want)
	}
	if got["nofile"] != fmt.Sprintf("%d/%d", want, want) || got["raise"] != "EPERM" {
		t.Errorf("nofile %q, raising it: %s", got["nofile"], got["raise"])
	}
	if got["ptys"] != strconv.Itoa(MaxPtys) || got["ptys_err"] != "ENOSPC" {
		t.Errorf("opened %q ptys (%s), want %d then ENOSPC", got["ptys"], got["ptys_err"], MaxPtys)
	}
	// The default holds a quarter of this machine's open files table.
	if data, err := os.ReadFile("/proc/sys/fs/file-max"); err == nil {
		if fileMax, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && int64(want)*DefaultPidsLimit > fileMax/4 {
			t.Errorf("%d descriptors × %d processes is more than a quarter of fs.file-max %d", want, DefaultPidsLimit, fileMax)
		}
	}
}

func TestNofileFor(t *testing.T) {
	for _, c := range []struct {
		pids    int
		fileMax int64
		want    int
	}{
		{512, 2466112, 1024},
		{4096, 2466112, 150},
		{512, 800000, 390},
		{100000, 1000, minNofile},
		{0, 2466112, DefaultNofile},
		{512, 0, DefaultNofile},
		{512, 1<<63 - 1, DefaultNofile},
	} {
		if got := nofileFor(c.pids, c.fileMax); got != c.want {
			t.Errorf("nofileFor(%d, %d) = %d, want %d", c.pids, c.fileMax, got, c.want)
		}
	}
}

// TestEscapeCPUCap: a jail's CPU cap is in its cgroup's cpu controller
// while its program runs (read from the host with the program blocked on
// its stdin), or, where no controller can be had, the jail runs at a
// niceness its processes cannot lower. Info says which.
func TestEscapeCPUCap(t *testing.T) {
	j, err := Start(t.Context(), script(`read -r _; n=$(nice); echo $n; renice -n $((n-1)) -p $$ >/dev/null 2>&1 && echo lowered; echo done`))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, j.Stderr) }()
	cpu := j.Info().Limits.CPU
	var file, want string
	switch cpu.Mechanism {
	case "cgroup-v1":
		file, want = filepath.Join("/sys/fs/cgroup/cpu", cgroupOf(t, j.Pid(), "cpu"), "cpu.cfs_quota_us"), "200000"
	case "cgroup-v2":
		file, want = filepath.Join("/sys/fs/cgroup", cgroupOf(t, j.Pid(), ""), "cpu.max"), "200000 100000"
	case "nice":
		if cpu.Reason == "" {
			t.Error("no reason for the fallback")
		}
	default:
		t.Errorf("CPU cap %+v", cpu)
	}
	if os.Geteuid() == 0 && !strings.HasPrefix(cpu.Mechanism, "cgroup-") {
		t.Errorf("a root operator's jail has no cpu controller: %+v", cpu)
	}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil || strings.TrimSpace(string(data)) != want {
			t.Errorf("%s holds %q (%v), want %q", file, data, err, want)
		}
		if cpu.CPUs != DefaultCPUs || cpu.QuotaMicros != 200000 || cpu.PeriodMicros != 100000 {
			t.Errorf("info %+v", cpu)
		}
	}
	if _, err := io.WriteString(j.Stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	_ = j.Stdin.Close()
	out, _ := io.ReadAll(j.Stdout)
	if err := j.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	wantOut := "0\ndone\n"
	if cpu.Mechanism == "nice" {
		wantOut = fmt.Sprintf("%d\ndone\n", Nice)
	}
	if string(out) != wantOut {
		t.Errorf("niceness and renice: %q, want %q", out, wantOut)
	}
}

// cgroupOf is pid's cgroup in the v1 hierarchy of controller c, or its v2
// one when c is "".
func cgroupOf(t *testing.T, pid int, c string) string {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if c == "" && parts[0] == "0" {
			return parts[2]
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			if c != "" && ctl == c {
				return parts[2]
			}
		}
	}
	t.Fatalf("process %d has no %q cgroup", pid, c)
	return ""
}
