package docker

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

	"github.com/docker/docker/api/types/mount"

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
	l, err := limitsOf(WorkspaceConfig{Memory: "2g", CPUs: 1.5, TmpSize: "100m", GitdirSize: "64m"})
	if err != nil {
		t.Fatal(err)
	}
	labels := labelsFor("run-1", t.TempDir())
	for _, allow := range []bool{false, true} {
		s := workerSpec(n, "sha256:abc", labels, l, allow)
		c, h := s.Config, s.Host
		// The network, when allowed, is the egress proxy's, reached
		// through the tool server's forwarder: never a network of the
		// container's own.
		if h.NetworkMode != "none" {
			t.Errorf("allow %v: network %q, want none", allow, h.NetworkMode)
		}
		wantCmd := []string{"toolbox", "-root", "/work"}
		if allow {
			wantCmd = append(wantCmd, "-egress-socket", "/opt/dirtywork/egress/proxy.sock", "-egress-listen", "127.0.0.1:3128")
		}
		if !slices.Equal(c.Cmd, wantCmd) || slices.Contains(c.Env, "HTTPS_PROXY=http://127.0.0.1:3128") != allow {
			t.Errorf("allow %v: command %q, env %q", allow, c.Cmd, c.Env)
		}
		if !h.ReadonlyRootfs || !slices.Equal(h.CapDrop, []string{"ALL"}) || len(h.CapAdd) != 0 || h.Privileged {
			t.Errorf("rootfs read-only %v, cap-drop %q, cap-add %q, privileged %v", h.ReadonlyRootfs, h.CapDrop, h.CapAdd, h.Privileged)
		}
		if !slices.Contains(h.SecurityOpt, "no-new-privileges") {
			t.Errorf("security options %q lack no-new-privileges", h.SecurityOpt)
		}
		if len(h.Binds) != 0 || len(h.VolumesFrom) != 0 {
			t.Errorf("binds %q, volumes-from %q", h.Binds, h.VolumesFrom)
		}
		if len(h.Mounts) != 3 {
			t.Fatalf("mounts %+v", h.Mounts)
		}
		for _, m := range h.Mounts {
			if m.Type != mount.TypeVolume {
				t.Errorf("mount at %s is %s, want a volume", m.Target, m.Type)
			}
		}
		if h.Mounts[0].Source != "dw-run-1-work" || h.Mounts[0].Target != "/work" ||
			h.Mounts[1].Source != "dw-run-1-tools" || h.Mounts[1].Target != "/opt/dirtywork" {
			t.Errorf("mounts %+v", h.Mounts)
		}
		// The tool server's volume is shared by the runs of a build: never
		// writable, and never filled from the image.
		if tb := h.Mounts[2]; tb.Source != n.Toolbox.name || tb.Target != "/opt/dirtywork-bin" || !tb.ReadOnly ||
			tb.VolumeOptions == nil || !tb.VolumeOptions.NoCopy {
			t.Errorf("toolbox mount %+v", tb)
		}
		if h.Memory != 2<<30 || h.MemorySwap != 2<<30 || h.NanoCPUs != 1.5e9 || h.PidsLimit == nil || *h.PidsLimit != 512 {
			t.Errorf("limits: memory %d swap %d cpus %d pids %v", h.Memory, h.MemorySwap, h.NanoCPUs, h.PidsLimit)
		}
		if h.Tmpfs["/tmp"] != "rw,exec,size=104857600,mode=1777" || h.Tmpfs["/gitdir"] != "rw,size=67108864,mode=0700,uid=1000,gid=1000" ||
			h.Tmpfs["/home/worker"] != "rw,size=256m,mode=0700,uid=1000,gid=1000" {
			t.Errorf("tmpfs %q", h.Tmpfs)
		}
		if h.Init == nil || *h.Init || !c.OpenStdin || !c.StdinOnce || !c.AttachStdin || c.Tty {
			t.Errorf("tether: init %v open-stdin %v stdin-once %v attach-stdin %v tty %v", h.Init, c.OpenStdin, c.StdinOnce, c.AttachStdin, c.Tty)
		}
		if c.User != "1000:1000" || c.WorkingDir != "" || c.Image != "sha256:abc" {
			t.Errorf("user %q workdir %q image %q", c.User, c.WorkingDir, c.Image)
		}
		if !slices.Equal(c.Entrypoint, []string{"/opt/dirtywork-bin/dirtywork"}) {
			t.Errorf("command %q %q", c.Entrypoint, c.Cmd)
		}
		if c.Labels["dirtywork.run"] != "run-1" || len(c.Labels["dirtywork.repo"]) != 64 {
			t.Errorf("labels %q", c.Labels)
		}
		if !slices.Contains(c.Env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") || !slices.Contains(c.Env, "GIT_DIR=/gitdir") {
			t.Errorf("env %q", c.Env)
		}
	}
}

// The measurer has no capability at all and runs as the worker's uid:
// it reads what the worker can, and a worker that reached it would gain
// nothing.
func TestMeasurerSpecHasNoCapability(t *testing.T) {
	n, _ := namesFor("run-1")
	s := measurerSpec(n, "sha256:abc", labelsFor("run-1", t.TempDir()))
	c, h := s.Config, s.Host
	if c.User != "1000:1000" || len(h.CapAdd) != 0 || !slices.Equal(h.CapDrop, []string{"ALL"}) || h.Privileged {
		t.Errorf("user %q, cap-add %q, cap-drop %q, privileged %v", c.User, h.CapAdd, h.CapDrop, h.Privileged)
	}
	if h.NetworkMode != "none" || !h.ReadonlyRootfs || !slices.Contains(h.SecurityOpt, "no-new-privileges") {
		t.Errorf("network %q, read-only root %v, security %q", h.NetworkMode, h.ReadonlyRootfs, h.SecurityOpt)
	}
	for _, m := range h.Mounts {
		if !m.ReadOnly || m.Type != mount.TypeVolume {
			t.Errorf("mount %+v is not a read-only volume", m)
		}
	}
}

func TestSetupSpecHasOnlyTheProxyAndNoGitDir(t *testing.T) {
	n, _ := namesFor("run-1")
	l, _ := limitsOf(WorkspaceConfig{})
	s := setupSpec(n, "sha256:abc", map[string]string{}, l, "make deps")
	if s.Host.NetworkMode != "none" || !s.Host.ReadonlyRootfs || !slices.Equal(s.Host.CapDrop, []string{"ALL"}) {
		t.Errorf("setup host config %+v", s.Host)
	}
	if len(s.Host.Mounts) != 3 || s.Host.Mounts[0].Target != "/work" || s.Host.Mounts[0].Type != mount.TypeVolume ||
		s.Host.Mounts[1].Target != "/opt/dirtywork" || !s.Host.Mounts[1].ReadOnly ||
		s.Host.Mounts[2].Target != "/opt/dirtywork-bin" || !s.Host.Mounts[2].ReadOnly {
		t.Errorf("setup mounts %+v", s.Host.Mounts)
	}
	if !slices.Equal(s.Config.Entrypoint[:8], []string{toolboxPath, "__egress", "run", "-socket", "/opt/dirtywork/egress/proxy.sock", "-listen", "127.0.0.1:3128", "--"}) ||
		!slices.Contains(s.Config.Env, "HTTP_PROXY=http://127.0.0.1:3128") {
		t.Errorf("setup command %q, env %q", s.Config.Entrypoint, s.Config.Env)
	}
	if s.Host.Init == nil || !*s.Host.Init {
		t.Error("the setup container has no init: its bash would be pid 1")
	}
	if s.Config.OpenStdin || s.Config.Entrypoint[len(s.Config.Entrypoint)-1] != "make deps" {
		t.Errorf("setup config %+v", s.Config)
	}
	for _, kv := range s.Config.Env {
		if strings.HasPrefix(kv, "GIT_DIR=") || strings.HasPrefix(kv, "GIT_WORK_TREE=") {
			t.Errorf("setup env has %q", kv)
		}
	}
	// The worker's spec is not changed by making the setup's.
	if w := workerSpec(n, "x", nil, l, false); len(w.Host.Mounts) != 3 || w.Host.Mounts[1].ReadOnly || w.Config.Entrypoint[0] != toolboxPath {
		t.Errorf("worker spec after setup spec: %+v", w)
	}
}

func TestEgressSpecLocksTheSidecarDown(t *testing.T) {
	n, _ := namesFor("run-1")
	allow, _ := egress.ParseRules("registry.npmjs.org,*.crates.io:443")
	s := egressSpec(n, "sha256:abc", map[string]string{"dirtywork.run": "run-1"}, allow, []netip.Addr{netip.MustParseAddr("192.0.2.2")})
	c, h := s.Config, s.Host
	if h.NetworkMode != "bridge" || !h.ReadonlyRootfs || !slices.Equal(h.CapDrop, []string{"ALL"}) || len(h.CapAdd) != 0 ||
		!slices.Contains(h.SecurityOpt, "no-new-privileges") || h.PidsLimit == nil || *h.PidsLimit != egressPids || h.Memory != egressMemory {
		t.Errorf("sidecar host config %+v", h)
	}
	if len(h.PortBindings) != 0 || len(c.ExposedPorts) != 0 {
		t.Errorf("the sidecar publishes ports: %v %v", h.PortBindings, c.ExposedPorts)
	}
	if c.User != "65534:65534" || c.Labels["dirtywork.run"] != "run-1" || !c.OpenStdin || !c.StdinOnce {
		t.Errorf("sidecar config %+v", c)
	}
	want := []string{"__egress", "proxy", "-socket", "/opt/dirtywork/egress/proxy.sock", "-allow", "registry.npmjs.org,*.crates.io:443", "-deny-addr", "192.0.2.2"}
	if !slices.Equal(c.Entrypoint, []string{toolboxPath}) || !slices.Equal(c.Cmd, want) {
		t.Errorf("sidecar command %q %q", c.Entrypoint, c.Cmd)
	}
	// Its socket goes into the run's tools volume; the tool server's
	// volume is read-only to it.
	if len(h.Mounts) != 2 || h.Mounts[0].Source != "dw-run-1-tools" || h.Mounts[0].Target != toolsDir ||
		h.Mounts[1].Target != toolboxDir || !h.Mounts[1].ReadOnly {
		t.Errorf("sidecar mounts %+v", h.Mounts)
	}
	if e := egressDirEntry(); e.Name != "egress/" || e.UID != egressUID || e.Mode != 0o755 {
		t.Errorf("the sidecar's directory %+v", e)
	}
}

func TestLimitsRefuseNonsense(t *testing.T) {
	for _, cfg := range []WorkspaceConfig{{Memory: "lots"}, {TmpSize: "-1"}, {GitdirSize: "1q"}, {CPUs: -1}, {PidsLimit: -1}} {
		if _, err := limitsOf(cfg); !errors.Is(err, errBadLimit) {
			t.Errorf("%+v: %v, want errBadLimit", cfg, err)
		}
	}
	l, err := limitsOf(WorkspaceConfig{})
	if err != nil || l.Memory != "4g" || l.CPUs != 2 || l.TmpSize != "1g" || l.GitdirSize != "512m" || l.PidsLimit != 512 {
		t.Errorf("defaults %+v, %v", l, err)
	}
	// Docker's own forms, as 0.9.1 passed them to docker; the kernel's
	// tmpfs gets bytes, which it reads whatever the form was.
	l, err = limitsOf(WorkspaceConfig{Memory: "1.5g", TmpSize: "4gb", GitdirSize: "512MiB"})
	if err != nil || l.MemoryBytes != 3<<29 || l.TmpBytes != 4<<30 || l.GitdirBytes != 512<<20 {
		t.Errorf("docker forms: %+v, %v", l, err)
	}
	if h := workerSpec(objectNames{}, "img", nil, l, false).Host; h.Tmpfs["/tmp"] != "rw,exec,size=4294967296,mode=1777" {
		t.Errorf("tmpfs /tmp options %q", h.Tmpfs["/tmp"])
	}
	// --pids-limit reaches the container.
	l, err = limitsOf(WorkspaceConfig{PidsLimit: 64})
	n, _ := namesFor("run-1")
	if s := workerSpec(n, "x", nil, l, false); err != nil || s.Host.PidsLimit == nil || *s.Host.PidsLimit != 64 {
		t.Errorf("pids limit 64: %v, %v", s.Host.PidsLimit, err)
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
		"/opt/dirtywork/objects >/gitdir/objects/info/alternates", "cp /opt/dirtywork/shallow /gitdir/shallow",
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
