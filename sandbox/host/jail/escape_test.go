//go:build linux

package jail

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Every TestEscape test is an escape class that must stay closed. They run
// as whoever runs the tests and, from TestEscapesUnprivileged, again as an
// unprivileged user.

// TestEscapeIdentity: the program is pid 1 of its namespace, keeps no
// capability, runs with no_new_privs and seccomp, has only lo and the
// jail's hostname, and a root operator's program is an unprivileged uid on
// the host.
func TestEscapeIdentity(t *testing.T) {
	r := bash(t, Config{Hostname: "jailhost"}, `echo pid $$ > /dev/stdout; hostname > /proc/self/fd/1; echo > /dev/stderr; grep -E '^(Cap[A-Za-z]+|NoNewPrivs|Seccomp):' /proc/self/status; `+
		`tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; id -u; id -G; ls /sys | wc -l; ulimit -c; ulimit -c 1000 2>/dev/null || echo no-raise`)
	if r.err != nil {
		t.Fatal(describe(r))
	}
	want := []string{
		"pid 1", "jailhost",
		"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
		"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "lo",
		strconv.Itoa(os.Getuid()), strconv.Itoa(os.Getgid()), "0", "0", "no-raise",
	}
	if got := lines(r.out); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	host, _ := os.Hostname()
	if host == "jailhost" {
		t.Error("the host's hostname changed")
	}
	info := r.info
	if os.Geteuid() == 0 {
		if info.UserNS.UID.Host < hostIDBase || info.UserNS.UID.Host >= hostIDBase+hostIDRange || !info.UserNS.IDMappedMounts {
			t.Errorf("a root operator's jail runs as host uid %d (idmapped %v)", info.UserNS.UID.Host, info.UserNS.IDMappedMounts)
		}
	} else if info.UserNS.UID.Host != os.Getuid() {
		t.Errorf("the jail runs as host uid %d, want the operator's %d", info.UserNS.UID.Host, os.Getuid())
	}
	if !info.Seccomp.Enabled || info.Seccomp.Profile == "" || !info.Landlock.Enabled || info.Network.Mode != "none" ||
		info.Capabilities != "none" || !info.NoNewPrivs || len(info.Off) > 0 {
		t.Errorf("info reports a partial jail: %+v", info)
	}
}

// TestEscapeSyscalls: the seccomp profile refuses what it should and
// allows what builds need, whatever the high bits of int arguments hold.
func TestEscapeSyscalls(t *testing.T) {
	got := helper(t, Config{}, "syscalls")
	want := map[string]string{
		"af_packet": "EAFNOSUPPORT", "af_packet_hibits": "EAFNOSUPPORT", "af_vsock": "EAFNOSUPPORT", "af_alg": "EAFNOSUPPORT",
		"clone3": "ENOSYS", "syscall_9999": "ENOSYS",
	}
	for _, c := range refusedCalls() {
		w, ok := want[c.name]
		if !ok {
			w = "EPERM"
		}
		if got[c.name] != w {
			t.Errorf("%s: got %q, want %s", c.name, got[c.name], w)
		}
	}
	for _, c := range allowedCalls() {
		if got[c.name] != "ok" {
			t.Errorf("%s: got %q, want ok", c.name, got[c.name])
		}
	}
}

// TestEscapeHostFiles: chmod, chown, utime, xattrs, file capabilities and
// chattr +i on host files the jail sees (read-only) and on the system
// directories all fail, and the host's files are unchanged. A file outside
// every mount cannot even be named.
func TestEscapeHostFiles(t *testing.T) {
	dir := t.TempDir()
	ro := hostFile(t, filepath.Join(dir, "ro", "f"), "host\n")
	outside := hostFile(t, filepath.Join(dir, "outside", "secret"), "secret\n")
	before := snapshot(t, ro, outside)
	cfg := Config{Mounts: []Mount{{Source: filepath.Dir(ro), Target: "/ro", ReadOnly: true}}}
	r := bash(t, cfg, strings.Join([]string{
		"for f in /ro/f /etc/passwd /usr/bin/bash; do",
		"  chmod 777 $f 2>/dev/null && echo chmod-$f",
		"  chown 12345:12345 $f 2>/dev/null && echo chown-$f",
		"  touch -d 2001-01-01 $f 2>/dev/null && echo utime-$f",
		"  setcap cap_net_raw+ep $f 2>/dev/null && echo setcap-$f",
		"  chattr +i $f 2>/dev/null && echo chattr-$f",
		"  echo x >> $f 2>/dev/null && echo append-$f",
		"done",
		"cat " + outside + " 2>/dev/null && echo read-outside",
		"ls " + dir + " 2>/dev/null && echo list-outside",
		"echo done",
	}, "\n"))
	if r.err != nil || strings.TrimSpace(r.out) != "done" {
		t.Errorf("a change to a host file got through:\n%s", describe(r))
	}
	x := helper(t, cfg, "xattr", "/ro/f", "/etc/passwd")
	for k, v := range x {
		if v == "ok" {
			t.Errorf("setxattr %s succeeded", k)
		}
	}
	if after := snapshot(t, ro, outside); after != before {
		t.Errorf("host files changed:\nbefore %s\nafter  %s", before, after)
	}
}

// snapshot renders what an attack could change about files.
func snapshot(t *testing.T, paths ...string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sz, _ := unix.Listxattr(p, nil)
		fmt.Fprintf(&b, "%s mode %o uid %d gid %d mtime %d xattrs %d content %q; ", p, st.Mode, st.Uid, st.Gid, st.Mtim.Nano(), sz, data)
	}
	return b.String()
}

// TestEscapeWritableMount: a writable mount takes writes, which land on the
// host owned by the operator (idmapped for a root operator) while the
// program sees them as its own; what it may not do there is give files to
// other users, mark them immutable or grant them capabilities.
func TestEscapeWritableMount(t *testing.T) {
	dir := t.TempDir()
	hostFile(t, filepath.Join(dir, "existing"), "old\n")
	cfg := Config{Mounts: []Mount{{Source: dir, Target: "/work"}}, Dir: "/work"}
	r := bash(t, cfg, strings.Join([]string{
		"echo new > created && mkdir sub && echo x > sub/f && mv sub/f moved && echo more >> existing",
		"stat -c '%u %g' created existing",
		"chown 12345 created 2>/dev/null && echo chown",
		"chattr +i created 2>/dev/null && echo chattr",
		"setcap cap_net_raw+ep created 2>/dev/null && echo setcap",
		"mknod blk b 254 0 2>/dev/null && echo mknod",
		"echo done",
	}, "\n"))
	own := fmt.Sprintf("%d %d", os.Getuid(), os.Getgid())
	if r.err != nil || strings.Join(lines(r.out), "|") != own+"|"+own+"|done" {
		t.Errorf("got\n%s\nwant the operator's ids %s twice, then done", describe(r), own)
	}
	for _, name := range []string{"created", "moved", "sub", "existing"} {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, name), &st); err != nil {
			t.Fatal(err)
		}
		if int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
			t.Errorf("%s is owned by %d:%d on the host, want the operator's %s", name, st.Uid, st.Gid, own)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "blk")); err == nil {
		t.Error("a device node was made in the mount")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "existing")); string(b) != "old\nmore\n" {
		t.Errorf("existing holds %q", b)
	}
}

// TestEscapeDevices: /dev holds only the harmless devices; no disk can be
// read through it, and no block device can be made and written.
func TestEscapeDevices(t *testing.T) {
	r := bash(t, Config{}, strings.Join([]string{
		"ls -A /dev | tr '\\n' ' '; echo",
		"for d in /dev/vda /dev/sda /dev/nvme0n1 /dev/mem /dev/kmsg /dev/port; do test -e $d && echo has-$d; done",
		"mknod /tmp/disk b 254 0 2>/dev/null && echo mknod",
		"mknod /dev/disk b 254 0 2>/dev/null && echo mknod-dev",
		"debugfs -R 'ls /' /dev/vda 2>/dev/null | head -1",
		"head -c 4 /dev/zero | od -An -tx1 | tr -d ' '",
		"echo done",
	}, "\n"))
	want := "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero \n00000000\ndone"
	if _, err := os.Stat("/dev/tty"); err != nil {
		want = strings.Replace(want, "tty ", "", 1)
	}
	if r.err != nil || strings.TrimSpace(r.out) != want {
		t.Errorf("got\n%s\nwant\n%s", describe(r), want)
	}
}

// TestEscapeNetwork: without AllowNetwork nothing on the host's loopback
// answers, links cannot be changed, and no packet socket sniffs; with it
// the host's loopback is reached, and links and raw sockets stay closed.
func TestEscapeNetwork(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	s := strings.Join([]string{
		fmt.Sprintf("(echo > /dev/tcp/127.0.0.1/%d) 2>/dev/null && echo reached", port),
		"ip link set lo down 2>/dev/null && echo link-down",
		"ip link add dummy0 type dummy 2>/dev/null && echo link-add",
		"ip addr add 10.9.9.9/32 dev lo 2>/dev/null && echo addr-add",
		"hostname escaped 2>/dev/null && echo hostname",
		"echo done",
	}, "\n")
	r := bash(t, Config{}, s)
	if r.err != nil || strings.TrimSpace(r.out) != "done" {
		t.Errorf("without the network:\n%s", describe(r))
	}
	r = bash(t, Config{AllowNetwork: true}, s)
	if r.err != nil || strings.TrimSpace(r.out) != "reached\ndone" {
		t.Errorf("with the host's network, want only the listener reached:\n%s", describe(r))
	}
	if r.info.Network.Mode != "host" {
		t.Errorf("network mode %q, want host", r.info.Network.Mode)
	}
	got := helper(t, Config{AllowNetwork: true}, "syscalls")
	for _, k := range []string{"af_packet", "af_inet_raw", "af_inet6_raw"} {
		if got[k] == "ok" {
			t.Errorf("%s with the host's network: %s", k, got[k])
		}
	}
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			if i.Name == "dummy0" {
				t.Error("a link was added to the host")
			}
			if i.Name == "lo" && i.Flags&net.FlagUp == 0 {
				t.Error("the host's lo went down")
			}
		}
	}
}

// TestEscapeSockets: path-named unix sockets in the operator's home and in
// /run are not there, and an abstract socket on the host's network is out
// of reach even when the jail shares it.
func TestEscapeSockets(t *testing.T) {
	var socks []string
	hd, err := os.MkdirTemp(homeDir(t), ".dirtywork-jailtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(hd) })
	socks = append(socks, filepath.Join(hd, "agent.sock"))
	runDir := "/run"
	if os.Geteuid() != 0 {
		runDir = os.Getenv("XDG_RUNTIME_DIR")
	}
	if runDir != "" {
		if rd, err := os.MkdirTemp(runDir, "dirtywork-jailtest-"); err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(rd) })
			socks = append(socks, filepath.Join(rd, "daemon.sock"))
		} else if os.Geteuid() == 0 {
			t.Fatal(err)
		}
	}
	abstract := fmt.Sprintf("@dirtywork-jailtest-%d", os.Getpid())
	for _, s := range append(socks, abstract) {
		l, err := net.Listen("unix", s)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
	}
	for _, network := range []bool{false, true} {
		var args []string
		for _, s := range append(socks, abstract) {
			args = append(args, "unix", s)
		}
		got := helper(t, Config{AllowNetwork: network}, "connect", args...)
		for _, s := range append(socks, abstract) {
			if got[s] == "ok" || got[s] == "" {
				t.Errorf("network %v: connect %s: %q", network, s, got[s])
			}
		}
	}
}

// TestEscapeHostTrees: the host's /tmp, the runs root (another run's
// transcript), the operator's home and /run are not in the jail, and
// nothing outside the writable mounts, /tmp and /dev/shm can be written.
func TestEscapeHostTrees(t *testing.T) {
	marker := hostFile(t, filepath.Join(os.TempDir(), fmt.Sprintf("dirtywork-jailtest-%d", os.Getpid())), "host tmp\n")
	t.Cleanup(func() { _ = os.Remove(marker) })
	runs := hostFile(t, filepath.Join(t.TempDir(), "runs", "other-run", "transcript.jsonl"), `{"event":"secret"}`+"\n")
	home := homeDir(t)
	r := bash(t, Config{}, strings.Join([]string{
		"for p in " + marker + " " + runs + " " + home + " /run /var/run /home /root /tmp/" + filepath.Base(marker) + "; do",
		"  test -e $p && echo visible-$p",
		"done",
		"for p in /x /usr/x /etc/x /bin/x /proc/x /sys/x /dev/x; do",
		"  touch $p 2>/dev/null && echo wrote-$p",
		"done",
		"echo 500 > /proc/self/oom_score_adj 2>/dev/null && echo wrote-proc",
		"touch /tmp/ok /dev/shm/ok && echo scratch-ok",
		"echo done",
	}, "\n"))
	if r.err != nil || strings.TrimSpace(r.out) != "scratch-ok\ndone" {
		t.Errorf("got\n%s", describe(r))
	}
}

// TestEscapeMounts: nothing can be unmounted, remounted or mounted from
// inside, by the program or by a command it executes (the jail's uid 0
// regains no capability on execve), and the jail's mounts are the same
// after trying. A read-only file over a writable tree (a gitfile) stays.
func TestEscapeMounts(t *testing.T) {
	work := t.TempDir()
	hostFile(t, filepath.Join(work, ".git"), "host gitfile\n")
	gitfile := hostFile(t, filepath.Join(t.TempDir(), "gitfile"), "jail gitfile\n")
	cfg := Config{Mounts: []Mount{{Source: work, Target: "/work"}, {Source: gitfile, Target: "/work/.git", ReadOnly: true}}}
	r := bash(t, cfg, strings.Join([]string{
		"before=$(cat /proc/self/mountinfo | md5sum)",
		"for m in $(cut -d' ' -f5 /proc/self/mountinfo | sort -r); do",
		"  umount $m 2>/dev/null && echo umount-$m",
		"  umount -l $m 2>/dev/null && echo umount-lazy-$m",
		"  mount -o remount,rw $m 2>/dev/null && echo remount-$m",
		"  bash -c \"grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status\" | grep -v 0000000000000000",
		"done",
		"cat /work/.git",
		"umount /tmp 2>/dev/null && echo umount",
		"umount -l /proc 2>/dev/null && echo umount-proc",
		"mount -o remount,rw / 2>/dev/null && echo remount",
		"mount -t tmpfs none /tmp 2>/dev/null && echo mount",
		"unshare -rm true 2>/dev/null && echo unshare",
		"after=$(cat /proc/self/mountinfo | md5sum)",
		`[ "$before" = "$after" ] || echo changed`,
		"echo done",
	}, "\n"))
	if r.err != nil || strings.TrimSpace(r.out) != "jail gitfile\ndone" {
		t.Errorf("got\n%s", describe(r))
	}
}

// TestEscapeForkStorm: 2,000 forks against a pids limit of 256 stop short
// of it, and the jail still dies at once.
func TestEscapeForkStorm(t *testing.T) {
	cfg := Config{PidsLimit: 256}
	r := bash(t, cfg, `perl -e '
		my ($ok, $fail) = (0, 0);
		for (1..2000) {
			my $p = fork();
			if (!defined $p) { $fail++; next }
			if ($p == 0) { sleep 30; exit 0 }
			$ok++;
		}
		print "$ok $fail\n";
		kill 9, -1;'`)
	if r.err != nil {
		t.Fatal(describe(r))
	}
	var ok, fail int
	if _, err := fmt.Sscan(r.out, &ok, &fail); err != nil {
		t.Fatalf("unreadable %q: %v", r.out, err)
	}
	t.Logf("%d forks succeeded, %d failed (%s)", ok, fail, r.info.Limits.Pids.Mechanism)
	if ok >= 256 || fail == 0 || ok+fail != 2000 {
		t.Errorf("%d forks succeeded and %d failed against a limit of 256", ok, fail)
	}
	if want := "cgroup-v1"; os.Geteuid() == 0 && r.info.Limits.Pids.Mechanism != want && r.info.Limits.Pids.Mechanism != "cgroup-v2" {
		t.Errorf("pids limit mechanism %q as root", r.info.Limits.Pids.Mechanism)
	}
}

// TestEscapeMemory: allocating past the memory limit does not get through.
func TestEscapeMemory(t *testing.T) {
	r := bash(t, Config{MemoryBytes: 64 << 20}, `perl -e '$x = "a" x (256*1024*1024); print "survived\n"' 2>/dev/null; echo "status $?"`)
	t.Logf("%s: %s (%v)", r.info.Limits.Memory.Mechanism, strings.TrimSpace(r.out), r.err)
	if strings.Contains(r.out, "survived") {
		t.Errorf("256 MiB allocated under a 64 MiB limit:\n%s", describe(r))
	}
	if !strings.Contains(r.out, "status") && r.err == nil {
		t.Errorf("no status:\n%s", describe(r))
	}
}

// TestEscapeTmpFill: /tmp holds no more than TmpSize.
func TestEscapeTmpFill(t *testing.T) {
	r := bash(t, Config{TmpSize: 8 << 20}, `dd if=/dev/zero of=/tmp/fill bs=1M count=20 2>/dev/null; echo "status $?"; stat -c %s /tmp/fill`)
	got := lines(r.out)
	if len(got) != 2 || got[0] == "status 0" {
		t.Fatalf("got\n%s", describe(r))
	}
	if n, err := strconv.Atoi(got[1]); err != nil || n > 8<<20 {
		t.Errorf("/tmp holds %s bytes past an 8 MiB limit", got[1])
	}
}

// TestEscapeKill: Kill takes the whole jail down at once, background jobs
// and setsid'd ones included, and Wait removes its cgroups.
func TestEscapeKill(t *testing.T) {
	cfg := script("setsid sleep 300 & sleep 300 & (sleep 300 &) ; echo started; wait")
	j, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if _, err := j.Stdout.Read(buf); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := j.Kill(); err != nil {
		t.Fatal(err)
	}
	err = j.Wait()
	if err == nil {
		t.Error("a killed jail's Wait returned nil")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the jail took %v to die", d)
	}
	// Every process of the jail is gone: nothing holds the output open.
	done := make(chan struct{})
	go func() {
		b := make([]byte, 64)
		for {
			if _, err := j.Stdout.Read(b); err != nil {
				break
			}
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("a process of the killed jail still holds its stdout")
	}
	if err := j.Kill(); err != nil {
		t.Errorf("killing a dead jail: %v", err)
	}
	if err2 := j.Wait(); !errors.Is(err2, err) && err2.Error() != err.Error() {
		t.Errorf("a second Wait returned %v, the first %v", err2, err)
	}
	if j.Info().Limits.Pids.Mechanism == "cgroup-v1" {
		for _, c := range []string{"pids", "memory", "cpu"} {
			entries, _ := os.ReadDir(filepath.Join("/sys/fs/cgroup", c, "dirtywork"))
			for _, e := range entries {
				if e.IsDir() && strings.HasPrefix(e.Name(), "jail-"+strconv.Itoa(os.Getpid())+"-") {
					t.Errorf("cgroup %s/%s left behind", c, e.Name())
				}
			}
		}
	}
}

// TestEscapeOutliveParent: when dirtywork dies (SIGKILL, no cleanup), its
// jail dies with it.
func TestEscapeOutliveParent(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe)
	cmd.Env = append(os.Environ(), helperEnv+"=parent")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("no pid from the helper: %v", err)
	}
	if err := unix.Kill(pid, 0); err != nil {
		t.Fatalf("the jail's pid 1 (%d) is not running: %v", pid, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed
	// A liveness bound, generous for a loaded machine. A zombie is dead:
	// whoever adopted it reaps it in its own time.
	deadline := time.Now().Add(20 * time.Second)
	for unix.Kill(pid, 0) == nil && !zombie(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the jail's pid 1 (%d) outlived its parent by 20 s", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// zombie reports whether pid has ended and waits to be reaped.
func zombie(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := bytes.LastIndexByte(data, ')')
	return i >= 0 && i+2 < len(data) && data[i+2] == 'Z'
}

// homeDir is the operator's home: $HOME, else the account's.
func homeDir(t *testing.T) string {
	t.Helper()
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Fatalf("no home directory: %v", err)
	}
	return u.HomeDir
}

// The probe of a directory with something mounted beneath it (TMPDIR of
// the unprivileged run has one) finds every layer: a jail that could run
// is never refused at preflight for it.
func TestEscapeProbeBesideMounts(t *testing.T) {
	r := Probe(t.Context(), os.TempDir())
	if err := r.Err(); err != nil {
		t.Fatalf("probe of %s: %v", os.TempDir(), err)
	}
	for _, l := range r.Layers {
		if !l.OK {
			t.Errorf("layer %s: %s", l.Name, l.Problem)
		}
	}
}
