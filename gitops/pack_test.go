package gitops

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// packRepo is a repository with history and refs that a single-commit
// pack must not leak.
type packRepo struct {
	dir  string
	repo Repo
	// c1, c2 and head are the three commits on main, oldest first.
	c1, c2, head string
	// tree is head's root tree.
	tree string
	// oldBlob is a.txt as c2 had it; head changed it.
	oldBlob string
	// secretCommit and secretBlob are only on branch secret.
	secretCommit, secretBlob string
	// tagObject is the annotated tag v1 (on c2).
	tagObject string
}

// newPackRepo builds main (c1 README.md; c2 a.txt; head changes a.txt and
// adds nested files, an executable, a symlink and a gitlink to the
// secret commit), branch secret off c2 with secret.txt, and tag v1.
func newPackRepo(t *testing.T) packRepo {
	t.Helper()
	dir := newRepo(t)
	p := packRepo{dir: dir, c1: gitT(t, dir, "rev-parse", "HEAD")}
	p.c2 = commitFile(t, dir, "a.txt", "a1\n")
	p.oldBlob = gitT(t, dir, "rev-parse", "HEAD:a.txt")
	gitT(t, dir, "tag", "-a", "-m", "release one", "v1")
	p.tagObject = gitT(t, dir, "rev-parse", "v1")

	gitT(t, dir, "switch", "-q", "-c", "secret")
	p.secretCommit = commitFile(t, dir, "secret.txt", "top secret\n")
	p.secretBlob = gitT(t, dir, "rev-parse", "HEAD:secret.txt")
	gitT(t, dir, "switch", "-q", "main")

	writeFile(t, filepath.Join(dir, "a.txt"), "a2\n")
	writeFile(t, filepath.Join(dir, "dir", "b.txt"), "b\n")
	writeFile(t, filepath.Join(dir, "dir", "deeper", "c.txt"), "c\n")
	writeFile(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\necho hi\n")
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "add", "-A")
	// A gitlink to a commit the repository does hold: the pack must still
	// not carry it.
	gitT(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+p.secretCommit+",vendor/sub")
	gitT(t, dir, "commit", "-q", "-m", "third")
	p.head = gitT(t, dir, "rev-parse", "HEAD")
	p.tree = gitT(t, dir, "rev-parse", "HEAD^{tree}")

	repo, err := ResolveRepo(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	p.repo = repo
	return p
}

// receiver is a repository set up from a pack exactly as the ShallowFile
// doc comment tells a container to.
type receiver struct {
	env          []string
	gitDir, work string
}

// git runs real git in the receiver and returns its trimmed stdout.
func (rc receiver) git(t *testing.T, args ...string) string {
	t.Helper()
	out, err := rc.gitE(args...)
	if err != nil {
		t.Fatalf("receiver: git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// gitE runs real git in the receiver and returns trimmed stdout or an
// error carrying stderr.
func (rc receiver) gitE(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = rc.work
	cmd.Env = append(os.Environ(), rc.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s", err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// receive makes an empty repository, streams pack straight into its git
// index-pack --stdin, then writes the shallow file (when shallow), points
// branch and HEAD at the packed commit and checks it out. It returns the
// receiver, the PackInfo and the bytes index-pack was given.
func receive(t *testing.T, branch string, shallow bool, pack func(io.Writer) (PackInfo, error)) (receiver, PackInfo, int64) {
	t.Helper()
	root := t.TempDir()
	rc := receiver{gitDir: filepath.Join(root, "gitdir"), work: filepath.Join(root, "work")}
	rc.env = []string{"GIT_DIR=" + rc.gitDir, "GIT_WORK_TREE=" + rc.work}
	if err := os.Mkdir(rc.work, 0o755); err != nil {
		t.Fatal(err)
	}
	rc.git(t, "init", "-q", "--template=")

	cmd := exec.CommandContext(t.Context(), "git", "index-pack", "--stdin")
	cmd.Dir = rc.work
	cmd.Env = append(os.Environ(), rc.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cw := &countingWriter{w: in}
	info, packErr := pack(cw)
	closeErr := in.Close()
	waitErr := cmd.Wait()
	if packErr != nil {
		t.Fatalf("pack: %v", packErr)
	}
	if closeErr != nil || waitErr != nil {
		t.Fatalf("index-pack: %v %v: %s", closeErr, waitErr, stderr.String())
	}

	if shallow {
		if err := os.WriteFile(filepath.Join(rc.gitDir, "shallow"), ShallowFile(info.Commit), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rc.git(t, "update-ref", "refs/heads/"+branch, info.Commit)
	rc.git(t, "symbolic-ref", "HEAD", "refs/heads/"+branch)
	rc.git(t, "read-tree", "-u", "--reset", "HEAD")
	return rc, info, cw.n
}

// countingWriter counts the bytes passed through to w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// objectSet lists every object in the receiver's object store.
func (rc receiver) objectSet(t *testing.T) map[string]bool {
	t.Helper()
	out := rc.git(t, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
	set := map[string]bool{}
	for _, oid := range strings.Fields(out) {
		set[oid] = true
	}
	return set
}

// treeObjects is commit, its root tree and every tree and blob under it,
// gitlinks left out, listed with ls-tree rather than rev-list so it does
// not share the code under test's definition.
func treeObjects(t *testing.T, dir, commit string) map[string]bool {
	t.Helper()
	set := map[string]bool{
		commit: true,
		gitT(t, dir, "rev-parse", commit+"^{tree}"): true,
	}
	for _, line := range strings.Split(gitT(t, dir, "ls-tree", "-r", "-t", commit), "\n") {
		// "<mode> SP <type> SP <oid> TAB <path>"
		fields := strings.Fields(line)
		if len(fields) < 3 {
			t.Fatalf("ls-tree line %q", line)
		}
		if fields[1] != "commit" {
			set[fields[2]] = true
		}
	}
	return set
}

// filesOf maps each regular file and symlink under root, .git excluded,
// to its kind, executable bit and content or target.
func filesOf(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			files[rel] = "link " + target
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			content, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files[rel] = fmt.Sprintf("file x=%t %s", fi.Mode()&0o100 != 0, content)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestPackCommitHoldsExactlyOneCommit(t *testing.T) {
	t.Parallel()
	p := newPackRepo(t)
	rc, info, written := receive(t, "main", true, func(w io.Writer) (PackInfo, error) {
		return New().PackCommit(t.Context(), p.repo, "HEAD", w)
	})

	want := treeObjects(t, p.dir, p.head)
	if info.Commit != p.head || info.Tree != p.tree || info.Objects != len(want) || info.Bytes != written {
		t.Errorf("PackInfo = %+v, want commit %s tree %s, %d objects, %d bytes", info, p.head, p.tree, len(want), written)
	}
	if got := rc.objectSet(t); !maps.Equal(got, want) {
		t.Errorf("receiver holds %d objects %v, want exactly %d %v", len(got), keys(got), len(want), keys(want))
	}
	if got := rc.git(t, "cat-file", "-t", p.head); got != "commit" {
		t.Errorf("cat-file -t %s = %q, want commit", p.head, got)
	}
	if got := rc.git(t, "rev-parse", "HEAD^{tree}"); got != p.tree {
		t.Errorf("HEAD^{tree} = %s, want %s", got, p.tree)
	}
	if got := rc.git(t, "log", "--format=%H"); got != p.head {
		t.Errorf("log shows %q, want only %s", got, p.head)
	}
	if got, want := filesOf(t, rc.work), filesOf(t, p.dir); !maps.Equal(got, want) {
		t.Errorf("checked-out files = %v, want %v", got, want)
	}
	rc.git(t, "diff", "--exit-code", p.head)
	rc.git(t, "fsck", "--connectivity-only", "--no-progress")

	absent := map[string]string{
		"c1": p.c1, "c2": p.c2, "old a.txt": p.oldBlob, "tag v1": p.tagObject,
		"secret commit (also the gitlink)": p.secretCommit, "secret.txt": p.secretBlob,
	}
	for name, oid := range absent {
		if _, err := rc.gitE("cat-file", "-e", oid); err == nil {
			t.Errorf("%s (%s) is in the receiver", name, oid)
		}
	}

	// Without the shallow file the missing parent is corruption: the
	// file is what makes the single commit a valid repository.
	if err := os.Remove(filepath.Join(rc.gitDir, "shallow")); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.gitE("fsck", "--connectivity-only", "--no-progress"); err == nil {
		t.Error("fsck passed without the shallow file; the parent must be missing")
	}
}

func TestPackCommitResolvesRefs(t *testing.T) {
	t.Parallel()
	p := newPackRepo(t)
	tests := []struct {
		name, ref, want string
	}{
		{"annotated tag is peeled", "v1", p.c2},
		{"relative ref", "main~2", p.c1},
		{"other branch", "secret", p.secretCommit},
		{"abbreviated id", p.c2[:12], p.c2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			info, err := New().PackCommit(t.Context(), p.repo, tt.ref, &buf)
			if err != nil {
				t.Fatal(err)
			}
			want := treeObjects(t, p.dir, tt.want)
			if info.Commit != tt.want || info.Tree != gitT(t, p.dir, "rev-parse", tt.want+"^{tree}") ||
				info.Objects != len(want) || info.Bytes != int64(buf.Len()) {
				t.Errorf("PackInfo = %+v, want commit %s, %d objects, %d bytes", info, tt.want, len(want), buf.Len())
			}
			if !bytes.HasPrefix(buf.Bytes(), []byte("PACK")) {
				t.Errorf("output starts %q, want a pack", buf.Bytes()[:min(buf.Len(), 12)])
			}
		})
	}
}

func TestPackHistory(t *testing.T) {
	t.Parallel()
	p := newPackRepo(t)
	rc, info, written := receive(t, "main", false, func(w io.Writer) (PackInfo, error) {
		return New().PackHistory(t.Context(), p.repo, "main", w)
	})
	if info.Commit != p.head || info.Tree != p.tree || info.Bytes != written {
		t.Errorf("PackInfo = %+v, want commit %s tree %s, %d bytes", info, p.head, p.tree, written)
	}
	want := map[string]bool{}
	for _, c := range []string{p.c1, p.c2, p.head} {
		for oid := range treeObjects(t, p.dir, c) {
			want[oid] = true
		}
	}
	if got := rc.objectSet(t); !maps.Equal(got, want) || info.Objects != len(want) {
		t.Errorf("receiver holds %v (header says %d), want exactly %v", keys(got), info.Objects, keys(want))
	}
	if got, want := rc.git(t, "log", "--format=%H"), p.head+"\n"+p.c2+"\n"+p.c1; got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
	rc.git(t, "fsck", "--connectivity-only", "--no-progress")
	for name, oid := range map[string]string{"tag v1": p.tagObject, "secret commit": p.secretCommit, "secret.txt": p.secretBlob} {
		if _, err := rc.gitE("cat-file", "-e", oid); err == nil {
			t.Errorf("%s (%s) is in the receiver", name, oid)
		}
	}
}

func TestPackBadCommit(t *testing.T) {
	t.Parallel()
	p := newPackRepo(t)
	packers := map[string]func(*Git, context.Context, Repo, string, io.Writer) (PackInfo, error){
		"PackCommit":  (*Git).PackCommit,
		"PackHistory": (*Git).PackHistory,
	}
	for pname, pack := range packers {
		for _, ref := range []string{"nope", "", "--all", "HEAD:a.txt", p.tree} {
			t.Run(pname+"/"+ref, func(t *testing.T) {
				var buf bytes.Buffer
				_, err := pack(New(), t.Context(), p.repo, ref, &buf)
				if !errors.Is(err, ErrBadRef) {
					t.Fatalf("err = %v, want ErrBadRef", err)
				}
				if !strings.Contains(err.Error(), fmt.Sprintf("%q", ref)) {
					t.Errorf("error %q does not name the ref %q", err, ref)
				}
				if buf.Len() != 0 {
					t.Errorf("%d bytes written for a bad ref", buf.Len())
				}
			})
		}
	}
}

// recordingGit returns a Git whose processes are recorded.
func recordingGit() (*Git, func() []*exec.Cmd) {
	var mu sync.Mutex
	var cmds []*exec.Cmd
	g := New()
	g.Command = func(ctx context.Context, name string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, name, args...)
		mu.Lock()
		defer mu.Unlock()
		cmds = append(cmds, cmd)
		return cmd
	}
	return g, func() []*exec.Cmd {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(cmds)
	}
}

// failingWriter accepts limit bytes, then fails every write.
type failingWriter struct {
	limit int
	err   error
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) <= f.limit {
		f.limit -= len(p)
		return len(p), nil
	}
	n := f.limit
	f.limit = 0
	return n, f.err
}

func TestPackCommitWriteError(t *testing.T) {
	t.Parallel()
	p := newPackRepo(t)
	g, cmds := recordingGit()
	errFull := errors.New("disk full")
	_, err := g.PackCommit(t.Context(), p.repo, "HEAD", &failingWriter{limit: 5, err: errFull})
	if !errors.Is(err, errFull) {
		t.Fatalf("err = %v, want the write error", err)
	}
	var subs []string
	for _, cmd := range cmds() {
		if cmd.ProcessState == nil {
			t.Errorf("%v was not waited for", cmd.Args)
		}
		subs = append(subs, subcommand(cmd.Args[1:]))
	}
	if want := []string{"rev-parse", "rev-parse", "rev-list", "pack-objects"}; !slices.Equal(subs, want) {
		t.Errorf("ran %v, want %v", subs, want)
	}
}

func TestPackCommitCancelKillsBothProcesses(t *testing.T) {
	t.Parallel()
	p := newPackRepo(t)
	pids, started, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(pids, started)

	// rev-list and pack-objects are replaced by processes that report
	// their pid on fd 3 and then hang, so the cancellation surely finds
	// both running.
	hang := `echo $$ >&3; exec sleep 60`
	g, argvs := fakePackGit(map[string]string{"rev-list": hang, "pack-objects": hang}, started)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := g.PackCommit(ctx, p.repo, "HEAD", io.Discard)
		done <- err
	}()
	// The pids are read aside so that PackCommit failing before both
	// started shows up as a failure, not a hang.
	pidc := make(chan int)
	go func() {
		lines := bufio.NewScanner(pids)
		for lines.Scan() {
			if pid, err := strconv.Atoi(lines.Text()); err == nil {
				pidc <- pid
			}
		}
	}()
	var running []int
	for len(running) < 2 {
		select {
		case pid := <-pidc:
			running = append(running, pid)
		case err := <-done:
			t.Fatalf("PackCommit returned %v before both processes started", err)
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of 2 processes started within 5 s", len(running))
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("PackCommit did not return within 5 s of cancellation")
	}
	// Returning means both were waited for: a process still running, or
	// killed but not reaped, would still answer signal 0.
	for _, pid := range running {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after PackCommit returned (kill 0: %v)", pid, err)
		}
	}
	want := [][]string{
		{"-C", p.repo.Root, "rev-list", "--objects", "--no-walk", p.head},
		{"-C", p.repo.Root, "pack-objects", "--stdout", "-q", "--delta-base-offset"},
	}
	if got := argvs(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("argv = %q, want %q", got, want)
	}
}

func TestPackCommitFailedRevListStopsPackObjects(t *testing.T) {
	t.Parallel()
	p := newPackRepo(t)
	// pack-objects that never finishes on its own: only the kill that
	// follows rev-list's failure ends it.
	g, _ := fakePackGit(map[string]string{
		"rev-list":     `echo "fatal: bad object" >&2; exit 3`,
		"pack-objects": `exec sleep 60`,
	})
	done := make(chan error, 1)
	go func() {
		_, err := g.PackCommit(t.Context(), p.repo, "HEAD", io.Discard)
		done <- err
	}()
	select {
	case err := <-done:
		var ge *Error
		if !errors.As(err, &ge) || ge.Subcommand != "rev-list" || ge.ExitCode != 3 || ge.Stderr != "fatal: bad object" {
			t.Errorf("err = %#v, want rev-list's *Error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("PackCommit did not return within 5 s of rev-list failing")
	}
}

// fakePackGit returns a Git that runs real git except for the
// subcommands in scripts, which run their sh script instead with files
// from fd 3 on, and a function listing the argv each replaced command
// was given.
func fakePackGit(scripts map[string]string, files ...*os.File) (*Git, func() [][]string) {
	var mu sync.Mutex
	var argvs [][]string
	g := New()
	g.Command = func(ctx context.Context, name string, args ...string) *exec.Cmd {
		script, ok := scripts[subcommand(args)]
		if !ok {
			return exec.CommandContext(ctx, name, args...)
		}
		mu.Lock()
		argvs = append(argvs, args)
		mu.Unlock()
		cmd := exec.CommandContext(ctx, "sh", "-c", script)
		cmd.ExtraFiles = files
		return cmd
	}
	return g, func() [][]string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(argvs)
	}
}

func TestStream(t *testing.T) {
	t.Parallel()
	p := newPackRepo(t)
	var out bytes.Buffer
	err := New().Stream(t.Context(), Call{Dir: p.dir, Args: []string{"cat-file", "--batch-check"}},
		strings.NewReader(p.head+"\n"+p.oldBlob+"\n"), &out)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s commit %s\n%s blob 3\n", p.head, gitT(t, p.dir, "cat-file", "-s", p.head), p.oldBlob)
	if out.String() != want {
		t.Errorf("stdout = %q, want %q", out.String(), want)
	}

	err = New().Stream(t.Context(), Call{Dir: p.dir, Args: []string{"cat-file", "-e", p.secretBlob + "0"}}, nil, io.Discard)
	var ge *Error
	if !errors.As(err, &ge) || ge.ExitCode != 128 || ge.Subcommand != "cat-file" {
		t.Errorf("err = %#v, want *Error from cat-file with exit code 128", err)
	}
}

// BenchmarkPackCommit packs a commit of 20,000 small files in 200
// directories.
func BenchmarkPackCommit(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "repo")
	if out, err := exec.Command("git", "init", "-q", "-b", "main", dir).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v: %s", err, out)
	}
	var stream bytes.Buffer
	stream.WriteString("commit refs/heads/main\ncommitter Bench <bench@example.com> 1767322800 +0000\ndata 5\nbulk\n")
	for i := range 20000 {
		content := fmt.Sprintf("file %d\n", i)
		fmt.Fprintf(&stream, "M 100644 inline d%03d/f%05d.txt\ndata %d\n%s\n", i/100, i, len(content), content)
	}
	imp := exec.Command("git", "-C", dir, "fast-import", "--quiet")
	imp.Stdin = &stream
	if out, err := imp.CombinedOutput(); err != nil {
		b.Fatalf("git fast-import: %v: %s", err, out)
	}
	repo, err := ResolveRepo(b.Context(), dir)
	if err != nil {
		b.Fatal(err)
	}
	g := New()
	var info PackInfo
	for b.Loop() {
		if info, err = g.PackCommit(b.Context(), repo, "main", io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	if want := 20000 + 200 + 1 + 1; info.Objects != want {
		b.Fatalf("packed %d objects, want %d", info.Objects, want)
	}
	b.ReportMetric(float64(info.Objects), "objects/op")
	b.ReportMetric(float64(info.Bytes), "packbytes/op")
}

// keys lists a set's members sorted, for messages.
func keys(set map[string]bool) []string {
	return slices.Sorted(maps.Keys(set))
}
