package workspace

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/egress"
)

func TestWorkerSpecLocksTheContainerDown(t *testing.T) {
	n, err := namesFor("run-1")
	if err != nil {
		t.Fatal(err)
	}
	n.Toolbox, err = toolboxVolumeOf(Toolbox{Data: []byte("ELF")})
	if err != nil {
		t.Fatal(err)
	}
	l, err := limitsOf(Config{Memory: "2g", CPUs: 1.5, TmpSize: "100m", GitdirSize: "64m"})
	if err != nil {
		t.Fatal(err)
	}
	labels := labelsFor("run-1", t.TempDir())
	for _, allow := range []bool{false, true} {
		s := workerSpec(n, "sha256:abc", labels, l, allow)
		// The network, when allowed, is the egress proxy's, reached
		// through the tool server's forwarder: never a network of the
		// container's own.
		if s.Network != "none" {
			t.Errorf("allow %v: network %q, want none", allow, s.Network)
		}
		// The server reports each command's OOM kills from its cgroup.
		wantCmd := []string{"toolbox", "-root", "/work", "-cgroup-oom"}
		if allow {
			wantCmd = append(wantCmd, "-egress-socket", "/opt/dirtywork/egress/proxy.sock", "-egress-listen", "127.0.0.1:3128")
		}
		if !slices.Equal(s.Cmd, wantCmd) || slices.Contains(s.Env, "HTTPS_PROXY=http://127.0.0.1:3128") != allow {
			t.Errorf("allow %v: command %q, env %q", allow, s.Cmd, s.Env)
		}
		if !s.ReadOnlyRoot || !slices.Equal(s.CapDrop, []string{"ALL"}) {
			t.Errorf("rootfs read-only %v, cap-drop %q", s.ReadOnlyRoot, s.CapDrop)
		}
		if !slices.Contains(s.SecurityOpt, "no-new-privileges") {
			t.Errorf("security options %q lack no-new-privileges", s.SecurityOpt)
		}
		if len(s.Mounts) != 3 {
			t.Fatalf("mounts %+v", s.Mounts)
		}
		if s.Mounts[0].Volume != "dw-run-1-work" || s.Mounts[0].Target != "/work" ||
			s.Mounts[1].Volume != "dw-run-1-tools" || s.Mounts[1].Target != "/opt/dirtywork" {
			t.Errorf("mounts %+v", s.Mounts)
		}
		// The tool server's volume is shared by the runs of a build: never
		// writable, and never filled from the image.
		if tb := s.Mounts[2]; tb.Volume != n.Toolbox.name || tb.Target != "/opt/dirtywork-bin" || !tb.ReadOnly || !tb.NoCopy {
			t.Errorf("toolbox mount %+v", tb)
		}
		if s.Memory != 2<<30 || s.NanoCPUs != 1.5e9 || s.PidsLimit != 512 {
			t.Errorf("limits: memory %d cpus %d pids %d", s.Memory, s.NanoCPUs, s.PidsLimit)
		}
		if s.Tmpfs["/tmp"] != "rw,exec,size=104857600,mode=1777" || s.Tmpfs["/gitdir"] != "rw,size=67108864,mode=0700,uid=1000,gid=1000" ||
			s.Tmpfs["/home/worker"] != "rw,size=256m,mode=0700,uid=1000,gid=1000" {
			t.Errorf("tmpfs %q", s.Tmpfs)
		}
		if s.Init || !s.Stdin || !s.Output {
			t.Errorf("tether: init %v stdin %v output %v", s.Init, s.Stdin, s.Output)
		}
		if s.User != "1000:1000" || s.Image != "sha256:abc" {
			t.Errorf("user %q image %q", s.User, s.Image)
		}
		if !slices.Equal(s.Entrypoint, []string{"/opt/dirtywork-bin/dirtywork"}) {
			t.Errorf("command %q %q", s.Entrypoint, s.Cmd)
		}
		if s.Labels["dirtywork.run"] != "run-1" || len(s.Labels["dirtywork.repo"]) != 64 {
			t.Errorf("labels %q", s.Labels)
		}
		if !slices.Contains(s.Env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") || !slices.Contains(s.Env, "GIT_DIR=/gitdir") {
			t.Errorf("env %q", s.Env)
		}
	}
}

// The measurer has no capability at all and runs as the worker's uid:
// it reads what the worker can, and a worker that reached it would gain
// nothing.
func TestMeasurerSpecHasNoCapability(t *testing.T) {
	n, _ := namesFor("run-1")
	s := measurerSpec(n, "sha256:abc", labelsFor("run-1", t.TempDir()))
	if s.User != "1000:1000" || !slices.Equal(s.CapDrop, []string{"ALL"}) {
		t.Errorf("user %q, cap-drop %q", s.User, s.CapDrop)
	}
	if s.Network != "none" || !s.ReadOnlyRoot || !slices.Contains(s.SecurityOpt, "no-new-privileges") {
		t.Errorf("network %q, read-only root %v, security %q", s.Network, s.ReadOnlyRoot, s.SecurityOpt)
	}
	for _, m := range s.Mounts {
		if !m.ReadOnly {
			t.Errorf("mount %+v is not read-only", m)
		}
	}
}

func TestSetupSpecHasOnlyTheProxyAndNoGitDir(t *testing.T) {
	n, _ := namesFor("run-1")
	l, _ := limitsOf(Config{})
	s := setupSpec(n, "sha256:abc", map[string]string{}, l, "make deps")
	if s.Network != "none" || !s.ReadOnlyRoot || !slices.Equal(s.CapDrop, []string{"ALL"}) {
		t.Errorf("setup spec %+v", s)
	}
	if len(s.Mounts) != 3 || s.Mounts[0].Target != "/work" ||
		s.Mounts[1].Target != "/opt/dirtywork" || !s.Mounts[1].ReadOnly ||
		s.Mounts[2].Target != "/opt/dirtywork-bin" || !s.Mounts[2].ReadOnly {
		t.Errorf("setup mounts %+v", s.Mounts)
	}
	if !slices.Equal(s.Entrypoint[:8], []string{toolboxPath, "__egress", "run", "-socket", "/opt/dirtywork/egress/proxy.sock", "-listen", "127.0.0.1:3128", "--"}) ||
		!slices.Contains(s.Env, "HTTP_PROXY=http://127.0.0.1:3128") {
		t.Errorf("setup command %q, env %q", s.Entrypoint, s.Env)
	}
	if !s.Init {
		t.Error("the setup container has no init: its bash would be pid 1")
	}
	if s.Stdin || s.Entrypoint[len(s.Entrypoint)-1] != "make deps" {
		t.Errorf("setup spec %+v", s)
	}
	for _, kv := range s.Env {
		if strings.HasPrefix(kv, "GIT_DIR=") || strings.HasPrefix(kv, "GIT_WORK_TREE=") {
			t.Errorf("setup env has %q", kv)
		}
	}
	// The worker's spec is not changed by making the setup's.
	if w := workerSpec(n, "x", nil, l, false); len(w.Mounts) != 3 || w.Mounts[1].ReadOnly || w.Entrypoint[0] != toolboxPath {
		t.Errorf("worker spec after setup spec: %+v", w)
	}
}

func TestEgressSpecLocksTheSidecarDown(t *testing.T) {
	n, _ := namesFor("run-1")
	allow, _ := egress.ParseRules("registry.npmjs.org,*.crates.io:443")
	s := egressSpec(n, "sha256:abc", map[string]string{"dirtywork.run": "run-1"}, allow, []netip.Addr{netip.MustParseAddr("192.0.2.2")})
	if s.Network != "bridge" || !s.ReadOnlyRoot || !slices.Equal(s.CapDrop, []string{"ALL"}) ||
		!slices.Contains(s.SecurityOpt, "no-new-privileges") || s.PidsLimit != egressPids || s.Memory != egressMemory {
		t.Errorf("sidecar spec %+v", s)
	}
	if s.User != "65534:65534" || s.Labels["dirtywork.run"] != "run-1" || !s.Stdin {
		t.Errorf("sidecar spec %+v", s)
	}
	want := []string{"__egress", "proxy", "-socket", "/opt/dirtywork/egress/proxy.sock", "-allow", "registry.npmjs.org,*.crates.io:443", "-deny-addr", "192.0.2.2"}
	if !slices.Equal(s.Entrypoint, []string{toolboxPath}) || !slices.Equal(s.Cmd, want) {
		t.Errorf("sidecar command %q %q", s.Entrypoint, s.Cmd)
	}
	// Its socket goes into the run's tools volume; the tool server's
	// volume is read-only to it.
	if len(s.Mounts) != 2 || s.Mounts[0].Volume != "dw-run-1-tools" || s.Mounts[0].Target != toolsDir ||
		s.Mounts[1].Target != toolboxDir || !s.Mounts[1].ReadOnly {
		t.Errorf("sidecar mounts %+v", s.Mounts)
	}
	if e := egressDirEntry(); e.Name != "egress/" || e.UID != egressUID || e.Mode != 0o755 {
		t.Errorf("the sidecar's directory %+v", e)
	}
}

func TestLimitsRefuseNonsense(t *testing.T) {
	for _, cfg := range []Config{{Memory: "lots"}, {TmpSize: "-1"}, {GitdirSize: "1q"}, {CPUs: -1}, {PidsLimit: -1}} {
		if _, err := limitsOf(cfg); !errors.Is(err, errBadLimit) {
			t.Errorf("%+v: %v, want errBadLimit", cfg, err)
		}
	}
	l, err := limitsOf(Config{})
	if err != nil || l.Memory != "4g" || l.CPUs != 2 || l.TmpSize != "1g" || l.GitdirSize != "512m" || l.PidsLimit != 512 {
		t.Errorf("defaults %+v, %v", l, err)
	}
	// Docker's own forms, as 0.9.1 passed them to docker; the kernel's
	// tmpfs gets bytes, which it reads whatever the form was.
	l, err = limitsOf(Config{Memory: "1.5g", TmpSize: "4gb", GitdirSize: "512MiB"})
	if err != nil || l.MemoryBytes != 3<<29 || l.TmpBytes != 4<<30 || l.GitdirBytes != 512<<20 {
		t.Errorf("docker forms: %+v, %v", l, err)
	}
	if s := workerSpec(objectNames{}, "img", nil, l, false); s.Tmpfs["/tmp"] != "rw,exec,size=4294967296,mode=1777" {
		t.Errorf("tmpfs /tmp options %q", s.Tmpfs["/tmp"])
	}
	// --pids-limit reaches the container.
	l, err = limitsOf(Config{PidsLimit: 64})
	n, _ := namesFor("run-1")
	if s := workerSpec(n, "x", nil, l, false); err != nil || s.PidsLimit != 64 {
		t.Errorf("pids limit 64: %v, %v", s.PidsLimit, err)
	}
	if _, err := namesFor("bad/slug"); err == nil {
		t.Error("a slug with a slash was accepted")
	}
}

func TestToolsUploadIsRootOwnedAndReadOnly(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"pack-x.pack": "PACK", "pack-x.idx": "IDX", "shallow": "abc\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	entries := toolsEntries(&basePack{Dir: dir, Name: "pack-x", Shallow: filepath.Join(dir, "shallow")})
	if err := writeUpload(&buf, entries); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	got := map[string]*tar.Header{}
	var order []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if h.Typeflag == tar.TypeReg && int64(len(data)) != h.Size {
			t.Errorf("%s: %d bytes, header says %d", h.Name, len(data), h.Size)
		}
		got[h.Name] = h
		order = append(order, h.Name)
	}
	want := map[string]int64{
		"/": 0o755, "objects/": 0o755, "objects/pack/": 0o755,
		"objects/pack/pack-x.pack": 0o444, "objects/pack/pack-x.idx": 0o444, "shallow": 0o444,
	}
	for name, mode := range want {
		h := got[name]
		if h == nil {
			t.Errorf("no member %s in %q", name, order)
			continue
		}
		if h.Mode != mode || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: mode %o uid %d gid %d, want %o root", name, h.Mode, h.Uid, h.Gid, mode)
		}
	}
	// The work volume's root is handed to the worker.
	if w := workRootEntries(); len(w) != 1 || w[0].Name != "/" || w[0].UID != 1000 || w[0].GID != 1000 || w[0].Source != "" {
		t.Errorf("work root entries: %+v", w)
	}
}

func TestRebaseArchiveDropsGitTheRootAndLinksIntoGit(t *testing.T) {
	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	members := []struct {
		name string
		typ  byte
		body string
	}{
		{"work", tar.TypeDir, ""},
		{"work/a.txt", tar.TypeReg, "a"},
		{"work/.git", tar.TypeDir, ""},
		{"work/.git/HEAD", tar.TypeReg, "ref"},
		{"work/sub/.GiT/config", tar.TypeReg, "x"},
		{"work/sub/b", tar.TypeSymlink, ""},
		{"work/fifo", tar.TypeFifo, ""},
		// Second names of a file under .git (the daemon names a file's
		// first path): left out with it, each listed.
		{"work/linked", tar.TypeLink, "work/.git/HEAD"},
		{"work/sub/again", tar.TypeLink, "work/linked"},
		{"work/sub/.GiT/l", tar.TypeLink, "work/a.txt"},
		{"work/kept", tar.TypeLink, "work/a.txt"},
	}
	for _, m := range members {
		h := &tar.Header{Name: m.name, Typeflag: m.typ, Size: int64(len(m.body)), Mode: 0o644, Linkname: "/etc"}
		switch m.typ {
		case tar.TypeLink:
			h.Linkname, h.Size = m.body, 0
		case tar.TypeSymlink:
		default:
			h.Linkname = ""
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if m.typ != tar.TypeLink {
			_, _ = io.WriteString(tw, m.body)
		}
	}
	_ = tw.Close()
	var out bytes.Buffer
	var dropped []string
	if err := rebaseArchive(&in, &out, &dropped); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dropped, []string{".git", "sub/.GiT", "linked", "sub/again"}) {
		t.Errorf("dropped %q", dropped)
	}
	tr := tar.NewReader(&out)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "kept" && h.Linkname != "a.txt" {
			t.Errorf("kept links to %q, want a.txt", h.Linkname)
		}
		if h.Name == "a.txt" {
			if data, _ := io.ReadAll(tr); string(data) != "a" {
				t.Errorf("a.txt = %q", data)
			}
		}
	}
	if !slices.Equal(names, []string{"a.txt", "sub/b", "fifo", "kept"}) {
		t.Errorf("members %q", names)
	}
}

func TestGitInitScript(t *testing.T) {
	base := strings.Repeat("ab", 20)
	s, err := gitInitScript("dirtywork/run-1", base, true, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "git init -q --template=\n",
		"/opt/dirtywork/objects >/gitdir/objects/info/alternates", "done </opt/dirtywork/shallow >/gitdir/shallow",
		"update-ref 'refs/heads/dirtywork/run-1' '" + base + "'", "read-tree -u --reset HEAD",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	s, _ = gitInitScript("main", strings.Repeat("c", 64), false, false)
	if strings.Contains(s, "shallow") || !strings.Contains(s, "git read-tree HEAD\n") || !strings.Contains(s, "--object-format=sha256") {
		t.Errorf("reset variant with history, sha256:\n%s", s)
	}
	for _, bad := range [][2]string{{"x'; rm -rf /", base}, {"a..b", base}, {"main", "HEAD"}, {"main", base + "'"}} {
		if _, err := gitInitScript(bad[0], bad[1], true, true); err == nil {
			t.Errorf("branch %q base %q accepted", bad[0], bad[1])
		}
	}
}

func TestOnlyServer(t *testing.T) {
	server := "/opt/dirtywork-bin/dirtywork toolbox -root /work"
	for _, tc := range []struct {
		procs []string
		want  bool
	}{
		{[]string{server}, true},
		{[]string{"/sbin/docker-init -- " + server, server}, false},
		{[]string{server, "sleep 100"}, false},
		{[]string{"sleep 100"}, false},
		{[]string{server, server}, false},
		{nil, false},
	} {
		if got := onlyServer(tc.procs); got != tc.want {
			t.Errorf("onlyServer(%q) = %v", tc.procs, got)
		}
	}
}
