package bench

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// git runs git in dir with no configuration of the machine's, for
// looking at a staged repository.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// loadFixtures loads the fixtures this build carries.
func loadFixtures(t *testing.T) []Fixture {
	t.Helper()
	fixtures, err := Load(Repos())
	if err != nil {
		t.Fatal(err)
	}
	return fixtures
}

// fixtureNamed is the fixture called name.
func fixtureNamed(t *testing.T, name string) Fixture {
	t.Helper()
	f, ok := FixtureNamed(loadFixtures(t), name)
	if !ok {
		t.Fatalf("no fixture %s", name)
	}
	return f
}

// inventoryTree is the git tree id of the generated inventory/: the
// generator writes the same files every time (a change to it is a change
// of the task, and of this id).
const inventoryTree = "1cf5aac417292f91d7b307b2922533c9fcc33afd"

// Every fixture stages as a repository of one commit by the bench's
// identity, holding what the worker may see and no solution; the solution
// then lands in it as a worker's uncommitted change.
func TestStage(t *testing.T) {
	t.Parallel()
	for _, f := range loadFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			parent := scratchDir(t)
			dir, err := Stage(t.Context(), f, parent)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(filepath.Base(dir), "dwbench-"+f.Name+"-") || filepath.Dir(dir) != mustResolve(t, parent) {
				t.Errorf("staged at %s, want %s/dwbench-%s-…", dir, parent, f.Name)
			}
			checkOneCommit(t, dir)
			files := strings.Fields(git(t, dir, "ls-files"))
			visible, err := VisibleFiles(f.FS)
			if err != nil {
				t.Fatal(err)
			}
			var generated int
			for _, p := range files {
				switch {
				case strings.HasPrefix(p, SolutionDir+"/"):
					t.Errorf("the solution is staged: %s", p)
				case strings.HasPrefix(p, "inventory/") && f.Generate == "inventory":
					generated++
				case !slices.Contains(visible, p):
					t.Errorf("staged %s, which is not a visible file of the fixture", p)
				}
			}
			for _, p := range visible {
				if !slices.Contains(files, p) {
					t.Errorf("%s is not staged", p)
				}
			}
			if f.Generate == "inventory" {
				if generated != InventoryFiles {
					t.Errorf("%d generated files, want %d", generated, InventoryFiles)
				}
				if id := strings.TrimSpace(git(t, dir, "rev-parse", "HEAD:inventory")); id != inventoryTree {
					t.Errorf("inventory/ is tree %s, want %s: the generator no longer writes the same files", id, inventoryTree)
				}
			}

			if err := f.ApplySolution(dir); err != nil {
				t.Fatal(err)
			}
			st := git(t, dir, "status", "--porcelain")
			if st == "" {
				t.Fatal("the solution changed nothing")
			}
			for _, line := range strings.Split(strings.TrimSpace(st), "\n") {
				p := strings.TrimSpace(line[2:])
				want, err := fs.ReadFile(f.FS, SolutionDir+"/"+p)
				if err != nil {
					want, err = fs.ReadFile(f.FS, SolutionDir+"/"+p+storedSuffix)
				}
				got, _ := os.ReadFile(filepath.Join(dir, p))
				if err != nil || string(got) != string(want) {
					t.Errorf("%s changed, and is not the solution's: %v", p, err)
				}
			}
		})
	}
}

// checkOneCommit checks that dir is a repository of one commit by the
// bench's identity with everything in it committed.
func checkOneCommit(t *testing.T, dir string) {
	t.Helper()
	if n := strings.TrimSpace(git(t, dir, "rev-list", "--count", "HEAD")); n != "1" {
		t.Errorf("%s commits, want 1", n)
	}
	if who := git(t, dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>"); who != "dirtywork-bench <bench@dirtywork.local>|dirtywork-bench <bench@dirtywork.local>\n" {
		t.Errorf("commit by %q", who)
	}
	if st := git(t, dir, "status", "--porcelain", "--ignored"); st != "" {
		t.Errorf("the staged tree is not all committed:\n%s", st)
	}
}

// Every staging is a repository of its own.
func TestStageIsUnique(t *testing.T) {
	t.Parallel()
	f := fixtureNamed(t, "py-windows")
	parent := scratchDir(t)
	seen := map[string]bool{}
	for range 3 {
		dir, err := Stage(t.Context(), f, parent)
		if err != nil {
			t.Fatal(err)
		}
		if seen[dir] {
			t.Fatalf("two stagings share %s", dir)
		}
		seen[dir] = true
		checkOneCommit(t, dir)
	}
}

// scratchDir is a directory removed when the test ends: in memory
// (/dev/shm) where the machine has that, because the inventory fixture
// stages 20,000 files, which a busy disk takes tens of seconds to make.
func scratchDir(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "linux" {
		if dir, err := os.MkdirTemp("/dev/shm", "dwbench-test-"); err == nil {
			t.Cleanup(func() {
				if err := os.RemoveAll(dir); err != nil {
					t.Errorf("remove %s: %v", dir, err)
				}
			})
			return dir
		}
	}
	return t.TempDir()
}

func mustResolve(t *testing.T, dir string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A fixture's Go module and Go files are staged under their own names,
// never under the names they are kept by.
func TestStageGoModule(t *testing.T) {
	t.Parallel()
	dir, err := Stage(t.Context(), fixtureNamed(t, "go-roman"), scratchDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err != nil || !strings.HasPrefix(string(b), "module example.com/roman\n") {
		t.Errorf("go.mod: %q, %v", b, err)
	}
	for _, p := range []string{"roman.go", "roman_test.go"} {
		if b, err := os.ReadFile(filepath.Join(dir, p)); err != nil || !strings.Contains("\n"+string(b), "\npackage roman\n") {
			t.Errorf("%s: %v", p, err)
		}
	}
	if kept, _ := filepath.Glob(filepath.Join(dir, "*"+storedSuffix)); len(kept) != 0 {
		t.Errorf("staged under the names they are kept by: %v", kept)
	}
}

// A staging that fails leaves nothing in the parent directory.
func TestStageFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	f, err := LoadFixture("broken", validFixture())
	if err != nil {
		t.Fatal(err)
	}
	f.Generate = "no-such-generator" // past validation, as a hand-made Fixture could be
	parent := t.TempDir()
	if _, err := Stage(t.Context(), f, parent); err == nil || !strings.Contains(err.Error(), "no generator") {
		t.Errorf("Stage = %v, want a missing generator", err)
	}
	f.Generate = ""
	f.FS = fstest.MapFS{"a": {Data: []byte("x"), Mode: os.ModeNamedPipe}}
	if _, err := Stage(t.Context(), f, parent); err == nil {
		t.Error("a fixture holding a pipe staged")
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
