// Package cgroup puts a jail under pids and memory limits with a cgroup of
// its own: cgroup v2 where this process may create one (root, or a
// delegated subtree), or, as root, the v1 pids and memory hierarchies.
// Where none can be had, Create says so and the jail falls back to
// rlimits. A CPU quota goes on the same group where the cpu controller can
// be had (v2's cpu.max, v1's cpu hierarchy); where it cannot, the group is
// made without one and says why (Group.CPU).
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Mechanisms, as Group.Mechanism reports them.
const (
	V1 = "cgroup-v1"
	V2 = "cgroup-v2"
)

// ErrUnavailable: no cgroup with the pids and memory controllers can be
// created by this process.
var ErrUnavailable = errors.New("no cgroup with the pids and memory controllers can be created")

// Limits are a group's caps; zero or negative is none.
type Limits struct {
	Pids   int64
	Memory int64
	// CPUQuota is the CPU time, in microseconds, the group's processes
	// together may use in every CPUPeriod (also microseconds; 0 is
	// DefaultCPUPeriod): 150000 of 100000 is one and a half CPUs.
	CPUQuota  int64
	CPUPeriod int64
}

// DefaultCPUPeriod is the period of a CPU quota, in microseconds: the
// kernel's own default, and docker's.
const DefaultCPUPeriod = 100000

// Group is one jail's cgroup: one directory under v2, one per controller
// under v1.
type Group struct {
	mechanism string
	// dirs are the group's directories, the pids one first under v1 (then
	// memory, then cpu when it has one).
	dirs []string
	// cpuFile is the file that holds the CPU quota ("" when there is
	// none); cpuWhy says why there is none although one was asked for.
	cpuFile, cpuWhy string
}

// CPU reports the group's CPU quota: the control file that holds it, or
// "" and why the cpu controller could not be had when a quota was asked
// for (why is "" when none was).
func (g *Group) CPU() (file, why string) { return g.cpuFile, g.cpuWhy }

// Mechanism is V1 or V2.
func (g *Group) Mechanism() string { return g.mechanism }

// Dirs are the group's directories.
func (g *Group) Dirs() []string { return append([]string(nil), g.dirs...) }

// Hierarchy locates the cgroup file systems of this machine. Tests point
// it at a tree of their own.
type Hierarchy struct {
	// Root is where cgroups are mounted: /sys/fs/cgroup.
	Root string
	// SelfCgroup is the content of /proc/self/cgroup.
	SelfCgroup string
	// Privileged is set when this process is root, which may create
	// cgroups anywhere and use the v1 hierarchies.
	Privileged bool
}

// System is this machine's hierarchy.
func System() Hierarchy {
	self, _ := os.ReadFile("/proc/self/cgroup") // absent: no cgroups at all
	return Hierarchy{Root: "/sys/fs/cgroup", SelfCgroup: string(self), Privileged: os.Geteuid() == 0}
}

// Create makes a group named name (unique per jail) with limits l, under
// the first place that works: a v2 hierarchy (root's, as root, else the
// nearest delegated ancestor of this process's cgroup that has both
// controllers), then, as root, the v1 pids and memory hierarchies. It
// fails with ErrUnavailable, saying why, when none works.
func (h Hierarchy) Create(name string, l Limits) (*Group, error) {
	if strings.ContainsAny(name, "/\x00") || name == "" || name == "." || name == ".." {
		return nil, fmt.Errorf("cgroup: bad group name %q", name)
	}
	var reasons []string
	if l.CPUQuota > 0 && l.CPUPeriod <= 0 {
		l.CPUPeriod = DefaultCPUPeriod
	}
	if parent, why := h.v2Parent(); parent != "" {
		g, err := createV2(parent, name, l)
		if err == nil {
			return g, nil
		}
		reasons = append(reasons, err.Error())
	} else if why != "" {
		reasons = append(reasons, why)
	}
	if h.Privileged {
		g, err := h.createV1(name, l)
		if err == nil {
			return g, nil
		}
		reasons = append(reasons, err.Error())
	} else {
		reasons = append(reasons, "cgroup v1 needs root")
	}
	return nil, fmt.Errorf("%w: %s", ErrUnavailable, strings.Join(reasons, "; "))
}

// Parent directories of dirtywork's groups.
const groupDir = "dirtywork"

// v2Parent finds where a v2 group may be made: as root, <root>/dirtywork
// on a unified hierarchy (made, with both controllers enabled, if need
// be); otherwise the nearest ancestor of this process's cgroup that it
// may write and that hands both controllers down. why says what was
// missing when there is none.
func (h Hierarchy) v2Parent() (dir, why string) {
	if !isV2(h.Root) {
		return "", "no unified (v2) cgroup hierarchy at " + h.Root
	}
	if h.Privileged {
		dir := filepath.Join(h.Root, groupDir)
		if err := enableControllers(h.Root); err != nil {
			return "", err.Error()
		}
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return "", fmt.Sprintf("create %s: %v", dir, err)
		}
		if err := enableControllers(dir); err != nil {
			return "", err.Error()
		}
		// The cpu controller is a bonus: a hierarchy may not offer it (a
		// realtime process in the root refuses it), and the group is made
		// without a quota then.
		for _, d := range []string{h.Root, dir} {
			if !hasController(d, "cpu") {
				_ = writeFile(filepath.Join(d, "cgroup.subtree_control"), "+cpu")
			}
		}
		return dir, ""
	}
	self := selfV2(h.SelfCgroup)
	if self == "" {
		return "", "this process's v2 cgroup is unknown"
	}
	// This process's own cgroup holds processes, so (no internal
	// processes) it cannot hand controllers down: start at its parent.
	for rel := filepath.Dir(self); ; rel = filepath.Dir(rel) {
		dir := filepath.Join(h.Root, rel)
		if writable(dir) && hasControllers(dir) {
			return dir, ""
		}
		if rel == "/" || rel == "." {
			break
		}
	}
	return "", "no delegated cgroup v2 subtree with the pids and memory controllers (run under systemd-run --user --scope -p Delegate=yes, or as root)"
}

// isV2 reports whether root is a cgroup2 mount: it has cgroup.controllers.
func isV2(root string) bool {
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	return err == nil
}

// selfV2 is the v2 path in /proc/self/cgroup's "0::/path" line.
func selfV2(content string) string {
	for line := range strings.SplitSeq(content, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	return ""
}

// writable reports whether this process may create groups in dir and move
// processes through it.
func writable(dir string) bool {
	return access(dir) && access(filepath.Join(dir, "cgroup.procs"))
}

// hasControllers reports whether dir hands the pids and memory controllers
// down to its children.
func hasControllers(dir string) bool {
	return hasController(dir, "pids") && hasController(dir, "memory")
}

// hasController reports whether dir hands controller c down to its
// children.
func hasController(dir, c string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	return err == nil && contains(strings.Fields(string(data)), c)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// enableControllers hands pids and memory down from dir, if not yet.
func enableControllers(dir string) error {
	if hasControllers(dir) {
		return nil
	}
	if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+pids +memory"); err != nil {
		return fmt.Errorf("enable the pids and memory controllers in %s: %w", dir, err)
	}
	return nil
}

// createV2 makes parent/name with limits l.
func createV2(parent, name string, l Limits) (*Group, error) {
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	g := &Group{mechanism: V2, dirs: []string{dir}}
	files := map[string]string{"pids.max": limitValue(l.Pids, "max"), "memory.max": limitValue(l.Memory, "max")}
	if l.Memory > 0 {
		files["memory.swap.max"] = "0" // the cap is on memory, not on memory plus swap
	}
	for file, v := range files {
		err := writeFile(filepath.Join(dir, file), v)
		noSwap := file == "memory.swap.max" && errors.Is(err, os.ErrNotExist) // no swap accounting
		if err != nil && !noSwap {
			_ = g.Remove()
			return nil, fmt.Errorf("set %s of cgroup %s: %w", file, dir, err)
		}
	}
	if l.CPUQuota > 0 {
		file := filepath.Join(dir, "cpu.max")
		switch err := writeFile(file, fmt.Sprintf("%d %d", l.CPUQuota, l.CPUPeriod)); {
		case err == nil:
			g.cpuFile = file
		case errors.Is(err, os.ErrNotExist):
			g.cpuWhy = "the cpu controller is not enabled for " + parent + " (cgroup.subtree_control)"
		default:
			g.cpuWhy = fmt.Sprintf("set cpu.max of %s: %v", dir, err)
		}
	}
	return g, nil
}

// createV1 makes dirtywork/name in the v1 pids and memory hierarchies.
func (h Hierarchy) createV1(name string, l Limits) (*Group, error) {
	g := &Group{mechanism: V1}
	for _, c := range []string{"pids", "memory"} {
		root := filepath.Join(h.Root, c)
		if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
			_ = g.Remove()
			return nil, fmt.Errorf("no v1 %s hierarchy at %s", c, root)
		}
		parent := filepath.Join(root, groupDir)
		if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			_ = g.Remove()
			return nil, fmt.Errorf("create %s: %w", parent, err)
		}
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			_ = g.Remove()
			return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		g.dirs = append(g.dirs, dir)
	}
	pids, mem := g.dirs[0], g.dirs[1]
	if l.CPUQuota > 0 {
		g.cpuWhy = h.addCPUV1(g, name, l)
	}
	if err := writeFile(filepath.Join(pids, "pids.max"), limitValue(l.Pids, "max")); err != nil {
		_ = g.Remove()
		return nil, fmt.Errorf("set pids.max of %s: %w", pids, err)
	}
	if l.Memory > 0 {
		v := strconv.FormatInt(l.Memory, 10)
		if err := writeFile(filepath.Join(mem, "memory.limit_in_bytes"), v); err != nil {
			_ = g.Remove()
			return nil, fmt.Errorf("set memory.limit_in_bytes of %s: %w", mem, err)
		}
		// With swap accounting, memory plus swap gets the same cap, so
		// the limit cannot be dodged by swapping.
		err := writeFile(filepath.Join(mem, "memory.memsw.limit_in_bytes"), v)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			_ = g.Remove()
			return nil, fmt.Errorf("set memory.memsw.limit_in_bytes of %s: %w", mem, err)
		}
	}
	return g, nil
}

// addCPUV1 adds dirtywork/name in the v1 cpu hierarchy to g with the
// quota of l, and returns why it could not ("" when it could); the group
// is whole without it.
func (h Hierarchy) addCPUV1(g *Group, name string, l Limits) string {
	// A hierarchy the cpu controller shares with cpuacct is mounted as
	// cpu,cpuacct, with cpu a link to it.
	root := filepath.Join(h.Root, "cpu")
	if _, err := os.Stat(filepath.Join(root, "cpu.cfs_quota_us")); err != nil {
		return "no v1 cpu hierarchy with CFS bandwidth control at " + root
	}
	parent := filepath.Join(root, groupDir)
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Sprintf("create %s: %v", parent, err)
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Sprintf("create cgroup %s: %v", dir, err)
	}
	// The period first: the quota is checked against it.
	for _, f := range []struct {
		name string
		v    int64
	}{{"cpu.cfs_period_us", l.CPUPeriod}, {"cpu.cfs_quota_us", l.CPUQuota}} {
		if err := writeFile(filepath.Join(dir, f.name), strconv.FormatInt(f.v, 10)); err != nil {
			_ = removeDir(dir)
			return fmt.Sprintf("set %s of %s: %v", f.name, dir, err)
		}
	}
	g.dirs = append(g.dirs, dir)
	g.cpuFile = filepath.Join(dir, "cpu.cfs_quota_us")
	return ""
}

// limitValue is n as a cgroup limit, none for no cap.
func limitValue(n int64, none string) string {
	if n <= 0 {
		return none
	}
	return strconv.FormatInt(n, 10)
}

// Add moves process pid (and, since it has no other threads yet that
// matter, its future children) into the group.
func (g *Group) Add(pid int) error {
	for _, dir := range g.dirs {
		if err := writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("move process %d into cgroup %s: %w", pid, dir, err)
		}
	}
	return nil
}

// PidsCurrent is the number of processes and threads in the group.
func (g *Group) PidsCurrent() (int64, error) {
	data, err := os.ReadFile(filepath.Join(g.dirs[0], "pids.current"))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

// removeWithin bounds Remove's wait for the group's last processes to be
// reaped: a killed jail's processes take a moment to leave.
const removeWithin = 5 * time.Second

// Remove kills what is left in the group and removes its directories. It
// is idempotent: a group already gone is removed.
func (g *Group) Remove() error {
	var errs []error
	for _, dir := range g.dirs {
		if err := removeDir(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeDir removes one cgroup directory, killing its processes first.
func removeDir(dir string) error {
	deadline := time.Now().Add(removeWithin)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		// Busy: processes are still in it. cgroup.kill (v2) kills them
		// all at once; elsewhere each is sent SIGKILL.
		if werr := writeFile(filepath.Join(dir, "cgroup.kill"), "1"); werr != nil {
			killProcs(dir)
		}
		time.Sleep(pause)
	}
}

// killProcs sends SIGKILL to every process listed in dir/cgroup.procs.
func killProcs(dir string) {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for f := range strings.FieldsSeq(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill() // gone already is fine
			}
		}
	}
}

// writeFile writes v to an existing cgroup control file.
func writeFile(path, v string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(v)
	cerr := f.Close()
	return errors.Join(werr, cerr)
}

// Sweep removes groups a crashed process left behind: those under the
// places Create uses whose name stale accepts. Only empty groups go
// (removing a cgroup that still holds a process fails); nothing is
// killed.
func (h Hierarchy) Sweep(stale func(name string) bool) {
	var parents []string
	if h.Privileged {
		parents = append(parents, filepath.Join(h.Root, groupDir),
			filepath.Join(h.Root, "pids", groupDir), filepath.Join(h.Root, "memory", groupDir),
			filepath.Join(h.Root, "cpu", groupDir))
	} else if dir, _ := h.v2Parent(); dir != "" {
		parents = append(parents, dir)
	}
	for _, parent := range parents {
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() && stale(e.Name()) {
				_ = os.Remove(filepath.Join(parent, e.Name())) // busy: still in use after all
			}
		}
	}
}
