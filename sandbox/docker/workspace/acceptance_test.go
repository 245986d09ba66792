package workspace

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// member is one archive entry as the tests look at it.
type member struct {
	typ      byte
	mode     int64
	uid, gid int
	link     string
	body     string
}

func readArchive(t *testing.T, b []byte) map[string]member {
	t.Helper()
	out := map[string]member{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[hdr.Name] = member{hdr.Typeflag, hdr.Mode, hdr.Uid, hdr.Gid, hdr.Linkname, string(body)}
	}
}

// The tree goes into the volume as the worker's, links as links, without
// the host worktree's .git and without anything but files, directories and
// links.
func TestWriteWorkTree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for p, body := range map[string]string{"a.py": "print(1)\n", "sub/b.sh": "echo\n", ".git": "gitdir: /elsewhere\n", "sub/.git/HEAD": "x"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "sub/b.sh"), 0o4755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/acceptance", filepath.Join(dir, "acceptance")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeWorkTree(&buf, dir); err != nil {
		t.Fatal(err)
	}
	got := readArchive(t, buf.Bytes())
	want := map[string]member{
		"/":             {tar.TypeDir, 0o755, workerUID, workerGID, "", ""},
		"a.py":          {tar.TypeReg, 0o644, workerUID, workerGID, "", "print(1)\n"},
		"acceptance":    {tar.TypeSymlink, 0o777, workerUID, workerGID, "/acceptance", ""},
		"sub/":          {tar.TypeDir, 0o755, workerUID, workerGID, "", ""},
		"sub/b.sh":      {tar.TypeReg, 0o755, workerUID, workerGID, "", "echo\n"},
		"sub/.git/":     {tar.TypeDir, 0o755, workerUID, workerGID, "", ""},
		"sub/.git/HEAD": {tar.TypeReg, 0o644, workerUID, workerGID, "", "x"},
	}
	if len(got) != len(want) {
		t.Errorf("archive holds %v", got)
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("%s = %+v, want %+v", name, g, w)
		}
	}
}

// The checker is root's and nobody may write it.
func TestWriteChecker(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	fsys := fstest.MapFS{"check.py": {Data: []byte("x")}, "lib/run.sh": {Data: []byte("y"), Mode: 0o755}}
	if err := writeChecker(&buf, fsys); err != nil {
		t.Fatal(err)
	}
	got := readArchive(t, buf.Bytes())
	want := map[string]member{
		"/":          {tar.TypeDir, 0o555, 0, 0, "", ""},
		"check.py":   {tar.TypeReg, 0o444, 0, 0, "", "x"},
		"lib/":       {tar.TypeDir, 0o555, 0, 0, "", ""},
		"lib/run.sh": {tar.TypeReg, 0o555, 0, 0, "", "y"},
	}
	if len(got) != len(want) {
		t.Errorf("archive holds %v", got)
	}
	for name, w := range want {
		if g := got[name]; g != w {
			t.Errorf("%s = %+v, want %+v", name, g, w)
		}
	}
	if err := writeChecker(io.Discard, fstest.MapFS{"l": {Mode: os.ModeSymlink}}); err == nil {
		t.Error("a checker holding a link was archived")
	}
}

// Only regular files inside the tree are hashed: a link, to /acceptance or
// within the tree, a directory or nothing at all reads as missing.
func TestHashTreeFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "acceptance", "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "acceptance", "check.py"), []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"acceptance/abs.py": "/etc/hostname", "acceptance/rel.py": "check.py", "out": "/"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	guard := map[string]string{
		"acceptance/check.py": sha("ok"), "acceptance/abs.py": "", "acceptance/rel.py": "", "acceptance/d": "",
		"acceptance/gone.py": "", "out/etc/hostname": "", "../x": "", "/etc/hostname": "",
	}
	sums, err := hashTreeFiles(dir, guard)
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || sums["acceptance/check.py"] != sha("ok") {
		t.Errorf("hashes %v, want only acceptance/check.py's", sums)
	}
	if guarded(guard, sums) {
		t.Error("a guard with missing files holds")
	}
	if !guarded(map[string]string{"acceptance/check.py": sha("ok")}, sums) {
		t.Error("an intact guard does not hold")
	}
}

// From a downloaded archive only regular members the guard names count.
func TestHashArchived(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range []struct {
		name string
		typ  byte
		body string
	}{
		{"acceptance/", tar.TypeDir, ""},
		{"acceptance/check.py", tar.TypeReg, "ok"},
		{"acceptance/other.py", tar.TypeReg, "x"},
		{"acceptance/link.py", tar.TypeSymlink, ""},
	} {
		hdr := &tar.Header{Name: m.name, Typeflag: m.typ, Size: int64(len(m.body)), Mode: 0o644, Linkname: "/acceptance/check.py"}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(m.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	guard := map[string]string{"acceptance/check.py": "", "acceptance/link.py": "", "acceptance": ""}
	if err := hashArchived(&buf, guard, sums); err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || sums["acceptance/check.py"] != sha("ok") {
		t.Errorf("hashes %v", sums)
	}
	if err := hashArchived(strings.NewReader("not a tar archive, not at all, and long enough to be read as a header block"), guard, sums); err == nil {
		t.Error("a broken archive hashed")
	}
}

// The output keeps its head and its tail.
func TestHeadTail(t *testing.T) {
	t.Parallel()
	h := newHeadTail(10)
	for _, s := range []string{"abc", "defgh", "ijklmnop", "qrstuvwxyz"} {
		if n, err := h.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	out, cut := h.bytes()
	if want := "abcde\n[output truncated]\nvwxyz"; string(out) != want || !cut {
		t.Errorf("kept %q (truncated %v), want %q", out, cut, want)
	}
	h = newHeadTail(10)
	_, _ = h.Write([]byte("0123456789"))
	if out, cut := h.bytes(); string(out) != "0123456789" || cut {
		t.Errorf("kept %q (truncated %v)", out, cut)
	}
}

// A spec that cannot be run, or a tree on this machine whose guarded files
// differ, never reaches the daemon.
func TestRunAcceptanceWithoutDaemon(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "check.py"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	checker := fstest.MapFS{"check.py": {Data: []byte("ok")}}
	eng := newFakeEngine(t, nil)
	c := AcceptanceChecker{Engine: eng}
	for name, spec := range map[string]AcceptanceSpec{
		"no tree":    {Acceptance: checker, Command: "true"},
		"two trees":  {TreeDir: dir, Volume: "v", Acceptance: checker, Command: "true"},
		"no checker": {TreeDir: dir, Command: "true"},
		"no command": {TreeDir: dir, Acceptance: checker, Command: " "},
	} {
		if _, err := c.RunAcceptance(t.Context(), spec); !errors.Is(err, ErrAcceptanceSpec) {
			t.Errorf("%s: %v, want ErrAcceptanceSpec", name, err)
		}
	}
	res, err := c.RunAcceptance(t.Context(), AcceptanceSpec{
		TreeDir: dir, Acceptance: checker, Command: "true", Guard: map[string]string{"check.py": sha("ok")},
	})
	if err != nil || res.Ran || res.Hashes["check.py"] != sha("changed") {
		t.Errorf("RunAcceptance = %+v, %v; want not run, with the changed file's hash", res, err)
	}
	if calls := eng.calls(); len(calls) != 0 {
		t.Errorf("the daemon was asked %v", calls)
	}
}

// A check of an intact tree: the tree and the checker go into volumes of
// the check's own through a fill container that never starts, the command
// runs in a locked-down container of its own, and everything the check
// made is gone when it returns; a missing image is worded as such.
func TestRunAcceptanceOnFakeDaemon(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "acceptance"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "acceptance", "check.py"), []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := newFakeEngine(t, map[string]daemon.Image{"worker:test": {ID: "sha256:feed"}})
	eng := &specRecorder{fakeEngine: fake}
	c := AcceptanceChecker{Engine: eng}
	spec := AcceptanceSpec{
		Image: "worker:test", TreeDir: dir, Acceptance: fstest.MapFS{"check.py": {Data: []byte("ok")}},
		Command: "python3 /acceptance/check.py", Guard: map[string]string{"acceptance/check.py": sha("ok")},
		Labels: map[string]string{"dirtywork.test": "x"},
	}
	res, err := c.RunAcceptance(t.Context(), spec)
	if err != nil || !res.Ran || res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("RunAcceptance = %+v, %v", res, err)
	}
	specs := eng.specs
	if len(specs) != 2 {
		t.Fatalf("created %d containers, want the fill and the check", len(specs))
	}
	for i, s := range specs {
		if s.Image != "sha256:feed" || s.User != userSpec() || s.Network != "none" || !s.ReadOnlyRoot ||
			!slices.Equal(s.CapDrop, []string{"ALL"}) || !slices.Equal(s.SecurityOpt, []string{"no-new-privileges"}) ||
			s.Memory != acceptanceMemory || s.PidsLimit != acceptancePids || s.Stdin ||
			s.Labels["dirtywork.test"] != "x" || s.Labels[LabelAcceptance] == "" {
			t.Errorf("container %d is not locked down: %+v", i, s)
		}
	}
	if run := specs[1]; !run.Init || !run.NoLogs || !run.Output || run.Tmpfs["/tmp"] != acceptanceTmp ||
		!slices.Equal(run.Mounts, []daemon.Mount{{Volume: run.Mounts[0].Volume, Target: workDir}, {Volume: run.Mounts[1].Volume, Target: acceptanceDir, ReadOnly: true}}) ||
		run.Entrypoint[len(run.Entrypoint)-1] != "cd /work && python3 /acceptance/check.py" {
		t.Errorf("the check's container: %+v", run)
	}
	if names := fake.containerNames(); len(names) != 0 {
		t.Errorf("containers left: %v", names)
	}
	for _, v := range specs[1].Mounts {
		if fake.hasVolume(v.Volume) {
			t.Errorf("volume %s left", v.Volume)
		}
	}

	spec.Image = "worker:gone"
	if _, err := c.RunAcceptance(t.Context(), spec); !errors.Is(err, ErrImageMissing) {
		t.Errorf("a missing image: %v", err)
	}
}

// specRecorder is a fake daemon that keeps the specs of the containers
// it creates.
type specRecorder struct {
	*fakeEngine
	specs []daemon.ContainerSpec
}

func (r *specRecorder) CreateContainer(ctx context.Context, name string, spec daemon.ContainerSpec) (string, error) {
	r.specs = append(r.specs, spec)
	return r.fakeEngine.CreateContainer(ctx, name, spec)
}

// RemoveAcceptance removes what carries the acceptance label and every
// label of the selector, and nothing else.
func TestRemoveAcceptanceSelects(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	eng := newFakeEngine(t, nil)
	mine := map[string]string{LabelAcceptance: "dw-accept-1", "dirtywork.test": "mine"}
	theirs := map[string]string{LabelAcceptance: "dw-accept-2", "dirtywork.test": "theirs"}
	for name, labels := range map[string]map[string]string{"a-mine": mine, "a-theirs": theirs, "run": {"dirtywork.test": "mine"}} {
		if err := eng.CreateVolume(ctx, name+"-v", labels); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.CreateContainer(ctx, name+"-c", daemon.ContainerSpec{Labels: labels}); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := AcceptanceChecker{Engine: eng}.RemoveAcceptance(ctx, map[string]string{"dirtywork.test": "mine"})
	slices.Sort(removed)
	if err != nil || !slices.Equal(removed, []string{"a-mine-c", "a-mine-v"}) {
		t.Errorf("RemoveAcceptance = %v, %v", removed, err)
	}
	if names := eng.containerNames(); !slices.Equal(names, []string{"a-theirs-c", "run-c"}) {
		t.Errorf("containers left: %v", names)
	}
}
