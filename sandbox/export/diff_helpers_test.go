package export

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// spec is one file of a test tree: content (a symlink's target) and mode,
// a regular file when the mode is zero.
type spec struct {
	body string
	mode BlobMode
}

func (s spec) blobMode() BlobMode {
	if s.mode == 0 {
		return ModeFile
	}
	return s.mode
}

type treeSpec map[string]spec

// baseOf is the tree as DiffTree's base.
func baseOf(tr treeSpec) []BaseFile {
	out := make([]BaseFile, 0, len(tr))
	for p, s := range tr {
		out = append(out, BaseFile{Path: p, Mode: s.blobMode(), Blob: []byte(s.body)})
	}
	return out
}

// materialize writes tr under dir.
func materialize(t testing.TB, dir string, tr treeSpec) {
	t.Helper()
	for p, s := range tr {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		switch s.blobMode() {
		case ModeSymlink:
			if err := os.Symlink(s.body, full); err != nil {
				t.Fatal(err)
			}
		case ModeExecutable:
			if err := os.WriteFile(full, []byte(s.body), 0o755); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(full, []byte(s.body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// diffOf runs DiffTree of after (written to a temp dir) against before.
func diffOf(t testing.TB, before, after treeSpec, opts DiffOptions) (*Diff, string) {
	t.Helper()
	dir := t.TempDir()
	materialize(t, dir, after)
	return diffDir(t, dir, before, opts)
}

func diffDir(t testing.TB, dir string, before treeSpec, opts DiffOptions) (*Diff, string) {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	var patch bytes.Buffer
	d, err := DiffTree(t.Context(), root, baseOf(before), &patch, opts)
	if err != nil {
		t.Fatalf("DiffTree: %v", err)
	}
	if d.PatchBytes != int64(patch.Len()) {
		t.Errorf("PatchBytes = %d, wrote %d", d.PatchBytes, patch.Len())
	}
	return d, patch.String()
}

// gitRepo is a repository with isolated configuration and fixed
// identities and dates.
type gitRepo struct {
	t   testing.TB
	dir string
	env []string
}

func newGitRepo(t testing.TB) *gitRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is required: %v", err)
	}
	home := t.TempDir()
	cfg := filepath.Join(home, "gitconfig")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"GIT_CONFIG_GLOBAL="+cfg,
		"GIT_CONFIG_NOSYSTEM=1",
		"HOME="+home,
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_AUTHOR_DATE=2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2020-01-01T00:00:00Z",
		"COLUMNS=80", "LC_ALL=C",
	)
	r := &gitRepo{t: t, dir: t.TempDir(), env: env}
	r.git("init", "-q")
	return r
}

func (r *gitRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir}, args...)...)
	cmd.Env = r.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// commit replaces the work tree with tr and commits it.
func (r *gitRepo) commit(tr treeSpec, msg string) {
	r.t.Helper()
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(r.dir, e.Name())); err != nil {
				r.t.Fatal(err)
			}
		}
	}
	materialize(r.t, r.dir, tr)
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
}

func sortedKeys(tr treeSpec) []string {
	out := make([]string, 0, len(tr))
	for k := range tr {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
