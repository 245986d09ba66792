package gitops

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// importFixture is a repository with a branch at its base and a clone of
// it (the worker's) with one commit on top, packed.
type importFixture struct {
	repo, base, tip, pack string
}

func newImportFixture(t *testing.T) importFixture {
	t.Helper()
	repo := newRepo(t)
	base := gitT(t, repo, "rev-parse", "HEAD")
	gitT(t, repo, "branch", "dirtywork/x")
	worker := filepath.Join(t.TempDir(), "worker")
	gitT(t, filepath.Dir(worker), "clone", "-q", repo, worker)
	tip := commitFile(t, worker, "new.txt", "new\n")
	pack := filepath.Join(t.TempDir(), "commits.pack")
	out, err := os.Create(pack)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "-C", worker, "pack-objects", "--revs", "-q", "--stdout")
	cmd.Stdin, cmd.Stdout = strings.NewReader(tip+"\n^"+base+"\n"), out
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return importFixture{repo: repo, base: base, tip: tip, pack: pack}
}

func (f importFixture) im(t *testing.T) Import {
	return Import{Pack: f.pack, Tip: f.tip, Base: f.base, Branch: "dirtywork/x", Quarantine: t.TempDir()}
}

func TestImportCommits(t *testing.T) {
	t.Parallel()
	f := newImportFixture(t)
	repo := Repo{Root: f.repo, CommonDir: filepath.Join(f.repo, ".git")}
	if err := New().ImportCommits(t.Context(), repo, f.im(t)); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, f.repo, "rev-parse", "dirtywork/x"); got != f.tip {
		t.Errorf("branch at %s, want %s", got, f.tip)
	}
	if got := gitT(t, f.repo, "rev-parse", "main"); got != f.base {
		t.Errorf("main moved to %s", got)
	}
	gitT(t, f.repo, "fsck", "--strict", "--no-dangling")
	// Importing the same again is refused: the branch is no longer at the
	// base (compare-and-swap), and nothing changes.
	err := New().ImportCommits(t.Context(), repo, f.im(t))
	if !errors.Is(err, ErrImportRefused) {
		t.Errorf("second import: %v", err)
	}
}

func TestImportRefusesBadPacks(t *testing.T) {
	t.Parallel()
	f := newImportFixture(t)
	repo := Repo{Root: f.repo, CommonDir: filepath.Join(f.repo, ".git")}
	data, err := os.ReadFile(f.pack)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"garbage":   []byte("PACK not really"),
		"truncated": data[:len(data)/2],
		"flipped":   append(append([]byte{}, data[:len(data)-30]...), append([]byte{data[len(data)-30] ^ 0xff}, data[len(data)-29:]...)...),
	} {
		t.Run(name, func(t *testing.T) {
			im := f.im(t)
			im.Pack = filepath.Join(t.TempDir(), "bad.pack")
			if err := os.WriteFile(im.Pack, content, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := New().ImportCommits(t.Context(), repo, im); !errors.Is(err, ErrImportRefused) {
				t.Errorf("import: %v, want a refusal", err)
			}
			if got := gitT(t, f.repo, "rev-parse", "dirtywork/x"); got != f.base {
				t.Errorf("branch moved to %s", got)
			}
		})
	}
	im := f.im(t)
	im.Tip = "not-an-id"
	if err := New().ImportCommits(t.Context(), repo, im); !errors.Is(err, ErrImportRefused) {
		t.Errorf("a bad tip: %v", err)
	}
	im = f.im(t)
	im.Tip = f.base // a tree or blob id would be refused the same way
	im.Base = f.tip
	if err := New().ImportCommits(t.Context(), repo, im); !errors.Is(err, ErrImportRefused) {
		t.Errorf("base and tip swapped: %v", err)
	}
}
