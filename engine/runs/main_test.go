package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/volstore"
	"github.com/dirtywork/dirtywork/transcript"
)

// testGlobalConfig is the global git config every git of the tests reads
// (the operator's, as far as the store can tell): an identity, and a filter
// driver that leaves a marker when anything runs it.
var testGlobalConfig string

// TestMain isolates every git the tests run from the machine's
// configuration.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "runs-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testGlobalConfig = filepath.Join(home, "gitconfig")
	marker := filepath.Join(home, "filter-ran")
	cfg := fmt.Sprintf("[user]\n\tname = Operator Name\n\temail = operator@example.com\n"+
		"[filter \"evil\"]\n\tclean = echo filter >>%[1]s; cat\n\tsmudge = echo filter >>%[1]s; cat\n"+
		"[core]\n\thooksPath = %[2]s\n", marker, filepath.Join(home, "hooks"))
	if err := os.WriteFile(testGlobalConfig, []byte(cfg), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = os.MkdirAll(filepath.Join(home, "hooks"), 0o755)
	for _, h := range []string{"post-checkout", "post-merge", "pre-commit", "post-commit", "reference-transaction"} {
		_ = os.WriteFile(filepath.Join(home, "hooks", h), []byte("#!/bin/sh\necho "+h+" >>"+marker+"\n"), 0o755)
	}
	env := map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "GIT_CONFIG_GLOBAL": testGlobalConfig,
		"GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_DATE": "2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE": "2026-01-02T03:04:05Z",
		transcript.HomeEnv: filepath.Join(home, "dw"),
	}
	for k, v := range env {
		_ = os.Setenv(k, v)
	}
	for _, k := range []string{
		"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_CONFIG_PARAMETERS",
		"GIT_CONFIG_COUNT", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
	} {
		_ = os.Unsetenv(k)
	}
	code := m.Run()
	_ = os.RemoveAll(home)
	os.Exit(code)
}

// filterMarker is the file the global config's filter driver and hooks
// touch when git runs them.
func filterMarker() string { return filepath.Join(filepath.Dir(testGlobalConfig), "filter-ran") }

func assertNothingRan(t *testing.T) {
	t.Helper()
	if data, err := os.ReadFile(filterMarker()); err == nil {
		t.Fatalf("a filter driver or hook ran: %s", data)
	}
}

// git runs git in dir (the operator's plain git) and returns its stdout.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	// The setup's own gits must not trip the marker either.
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=Setup", "-c", "user.email=setup@example.com"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newRepo makes a repository with one commit on main: a.txt, b.txt.
func newRepo(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo")
	git(t, dir, "init", "-q", "-b", "main", repo)
	writeFile(t, filepath.Join(repo, "a.txt"), "alpha\n")
	writeFile(t, filepath.Join(repo, "b.txt"), "beta\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "base")
	writeFile(t, filepath.Join(repo, ".git", "info", "exclude"), ".worktrees/\n")
	return repo
}

// testEnv is a store over a fresh runs root, with a fake daemon.
type testEnv struct {
	t      testing.TB
	root   string
	store  *Store
	docker *fakeDocker
}

func newEnv(t testing.TB) *testEnv {
	t.Helper()
	root := filepath.Join(t.TempDir(), "runs")
	if err := transcript.EnsureDir(root); err != nil {
		t.Fatal(err)
	}
	fd := newFakeDocker()
	return &testEnv{t: t, root: root, docker: fd, store: Open(root, WithDocker(fd))}
}

// addRun writes a run dir with run.json rec (slug and repo filled in).
func (e *testEnv) addRun(slug string, rec map[string]any) string {
	e.t.Helper()
	dir, err := transcript.CreateRunDir(e.root, slug)
	if err != nil {
		e.t.Fatal(err)
	}
	full := map[string]any{"schema_version": 2, "slug": slug, "status": "completed", "started": "2026-01-02T03:04:05.000000+00:00"}
	for k, v := range rec {
		full[k] = v
	}
	if err := transcript.WriteRecord(dir, full); err != nil {
		e.t.Fatal(err)
	}
	return dir
}

// addLaneRun makes a worktree of repo for slug (as a run's lane) and the
// run's record; it returns the worktree.
func (e *testEnv) addLaneRun(repo, slug string, rec map[string]any) string {
	e.t.Helper()
	wt := filepath.Join(repo, ".worktrees", "dw-"+slug)
	git(e.t, repo, "worktree", "add", "-q", "-b", "dirtywork/"+slug, wt, "main")
	base := git(e.t, repo, "rev-parse", "main")
	full := map[string]any{
		"repo": repo, "worktree": wt, "branch": "dirtywork/" + slug, "base_commit": base,
		"base_ref": "HEAD", "task": "fix the thing\nwith details", "model": "test-model", "sandbox": "none", "provider": "openai",
	}
	for k, v := range rec {
		full[k] = v
	}
	e.addRun(slug, full)
	return wt
}

func readJSON(t testing.TB, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// fakeDocker is a daemon in memory, counting list calls.
type fakeDocker struct {
	mu         sync.Mutex
	containers map[string]docker.Labelled
	volumes    map[string]docker.Labelled
	lists      int
	down       error
	removed    []string
	started    []string
	// stores are the volume file systems, by volume.
	stores map[string]volstore.Listed
}

func newFakeDocker() *fakeDocker {
	return &fakeDocker{containers: map[string]docker.Labelled{}, volumes: map[string]docker.Labelled{}, stores: map[string]volstore.Listed{}}
}

func (f *fakeDocker) addContainer(name, state, slug, repo string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.containers[name] = docker.Labelled{Name: name, State: state, Labels: map[string]string{docker.LabelRun: slug, docker.LabelRepo: docker.RepoLabel(repo)}}
}

func (f *fakeDocker) addVolume(name, slug, repo string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.volumes[name] = docker.Labelled{Name: name, Labels: map[string]string{docker.LabelRun: slug, docker.LabelRepo: docker.RepoLabel(repo)}}
}

func (f *fakeDocker) ListLabelled(context.Context) ([]docker.Labelled, []docker.Labelled, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.down != nil {
		return nil, nil, f.down
	}
	var cs, vs []docker.Labelled
	for _, c := range f.containers {
		cs = append(cs, c)
	}
	for _, v := range f.volumes {
		vs = append(vs, v)
	}
	return cs, vs, nil
}

func (f *fakeDocker) labels(m map[string]docker.Labelled, name string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return nil, f.down
	}
	o, ok := m[name]
	if !ok {
		return nil, fmt.Errorf("inspect %s: %w", name, docker.ErrNotFound)
	}
	return o.Labels, nil
}

func (f *fakeDocker) ContainerLabels(_ context.Context, name string) (map[string]string, error) {
	return f.labels(f.containers, name)
}

func (f *fakeDocker) VolumeLabels(_ context.Context, name string) (map[string]string, error) {
	return f.labels(f.volumes, name)
}

func (f *fakeDocker) remove(m map[string]docker.Labelled, name string, want map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return f.down
	}
	o, ok := m[name]
	if !ok {
		return nil
	}
	for k, v := range want {
		if o.Labels[k] != v {
			return fmt.Errorf("%w: %s", docker.ErrLabelMismatch, name)
		}
	}
	delete(m, name)
	f.removed = append(f.removed, name)
	return nil
}

func (f *fakeDocker) RemoveContainer(_ context.Context, name string, want map[string]string) error {
	return f.remove(f.containers, name, want)
}

func (f *fakeDocker) RemoveVolume(_ context.Context, name string, want map[string]string) error {
	if err := f.remove(f.volumes, name, want); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.stores, name)
	return nil
}

func (f *fakeDocker) StartContainer(_ context.Context, name string, want map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[name]
	switch {
	case f.down != nil:
		return f.down
	case !ok:
		return fmt.Errorf("inspect %s: %w", name, docker.ErrNotFound)
	}
	for k, v := range want {
		if c.Labels[k] != v {
			return fmt.Errorf("%w: %s", docker.ErrLabelMismatch, name)
		}
	}
	c.State = "running"
	f.containers[name] = c
	f.started = append(f.started, name)
	return nil
}

func (f *fakeDocker) addStore(volume string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stores[volume] = volstore.Listed{Volume: volume, Image: "/images/" + volume + ".ext4", ImageExists: true, Devices: []string{"/dev/loop9"}}
}

func (f *fakeDocker) VolumeStores(context.Context) ([]volstore.Listed, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []volstore.Listed
	for _, s := range f.stores {
		out = append(out, s)
	}
	return out, nil
}

func (f *fakeDocker) ReleaseVolumeStore(_ context.Context, volume string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.stores[volume]
	delete(f.stores, volume)
	if ok {
		f.removed = append(f.removed, "store:"+volume)
	}
	return ok, nil
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// startFakeOriginal starts a process shaped like a run of dirtywork 0.9.1
// (a `dirtywork` script run by its interpreter, as pipx's is) that lives
// until the test ends or stop is called, and returns its pid.
func startFakeOriginal(t *testing.T) (pid int, stop func()) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "dirtywork")
	if err := os.WriteFile(script, []byte("read line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "sh", script, "run", "--repo", "/nowhere", "a task")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := false
	stop = func() {
		if done {
			return
		}
		done = true
		_ = in.Close() // read ends, the script exits
		_ = cmd.Wait()
	}
	t.Cleanup(stop)
	return cmd.Process.Pid, stop
}

// isoNow is the time now as run.json records it.
func isoNow() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000000+00:00") }
