//go:build docker

package workspace

import (
	"archive/tar"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
)

// exportCase is a tree the worker leaves, and what the export must make
// of it.
type exportCase struct {
	name    string
	files   map[string]string // the base commit
	command string
	limits  sandbox.Limits
	check   func(t *testing.T, fin sandbox.Finalization, lane, runDir string)
}

// runExportCase runs c's command in a fresh workspace and finalizes it;
// the export must succeed, and nothing outside the lane may change.
func runExportCase(t *testing.T, c exportCase) {
	slug := newSlug(t)
	files := c.files
	if files == nil {
		files = map[string]string{"a.txt": "a\n"}
	}
	r := newTestRepo(t, slug, files)
	cfg := liveConfig(slug, r)
	if c.limits != (sandbox.Limits{}) {
		cfg.Limits = c.limits
	}
	w := openLive(t, cfg)
	res, err := w.Bash(t.Context(), c.command, 120*time.Second)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("command: %+v, %v", res, err)
	}
	// Every later call still works: nothing the tree holds is a breach.
	if got := bash(t, w, "echo fine"); got != "fine" {
		t.Fatalf("after the command: %q", got)
	}
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fin.ExportStatus != "ok" || fin.WatchdogViolation != nil {
		t.Fatalf("export_status %q, violation %v", fin.ExportStatus, fin.WatchdogViolation)
	}
	if _, err := os.Lstat("/root"); err != nil {
		t.Fatal(err)
	}
	c.check(t, fin, r.worktree, r.runDir)
}

// The export's decisions on trees a worker can leave: nothing benign
// fails it, nothing hostile reaches the host as it was.
func TestLiveExportDecisions(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "fsmonitor-ran")
	cases := []exportCase{
		{
			// A directory git would take for a repository, with a
			// command host git would run: moved to the run dir.
			name: "embedded bare repository",
			command: `unset GIT_DIR GIT_WORK_TREE; git init -q --bare docs && cd docs && git config core.bare false &&
				git config core.worktree .. && git config core.fsmonitor 'touch ` + marker + `; false' && echo notes > ../notes.txt`,
			check: func(t *testing.T, fin sandbox.Finalization, lane, runDir string) {
				if !slices.Equal(fin.DroppedGitEntries, []string{"docs"}) {
					t.Errorf("dropped_git_entries %q", fin.DroppedGitEntries)
				}
				if _, err := os.Lstat(filepath.Join(lane, "docs")); !os.IsNotExist(err) {
					t.Fatalf("docs is in the lane: %v", err)
				}
				// Taken out before verify could see it, kept as the archive
				// the daemon handed out: nothing in it can run.
				if idx := readFile(t, filepath.Join(runDir, QuarantineDir, "index.json")); !strings.Contains(idx, `"path": "docs"`) {
					t.Errorf("quarantine index %s", idx)
				}
				if members := tarNames(t, filepath.Join(runDir, QuarantineDir, "repository-1.tar")); !slices.Contains(members, "docs/config") {
					t.Errorf("quarantined archive holds %q", members)
				}
				if b, err := os.ReadFile(filepath.Join(lane, "notes.txt")); err != nil || string(b) != "notes\n" {
					t.Errorf("notes.txt %q, %v", b, err)
				}
				// What a prompt with git integration runs on cd.
				if err := os.Mkdir(filepath.Join(lane, "docs"), 0o755); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command("git", "status")
				cmd.Dir = filepath.Join(lane, "docs")
				_ = cmd.Run()
				if _, err := os.Lstat(marker); !os.IsNotExist(err) {
					t.Fatalf("host git ran the worker's fsmonitor: %v", err)
				}
				if slices.Contains(fin.FilesChanged, "docs/config") || !slices.Contains(fin.FilesChanged, "notes.txt") {
					t.Errorf("files_changed %q", fin.FilesChanged)
				}
			},
		},
		{
			// The loss: removing base's src/* must not resolve through
			// the new link and delete lib/*.
			name:    "dir moved and linked back",
			files:   map[string]string{"src/a.go": "package a\n", "src/b.go": "package b\n", "README": "r\n"},
			command: "mv src lib && ln -s lib src",
			check: func(t *testing.T, fin sandbox.Finalization, lane, runDir string) {
				for _, f := range []string{"lib/a.go", "lib/b.go"} {
					if _, err := os.Stat(filepath.Join(lane, f)); err != nil {
						t.Errorf("%s: %v", f, err)
					}
				}
				if target, err := os.Readlink(filepath.Join(lane, "src")); err != nil || target != "lib" {
					t.Errorf("src -> %q, %v", target, err)
				}
				want := []string{"lib/a.go", "lib/b.go", "src", "src/a.go", "src/b.go"}
				if !slices.Equal(fin.FilesChanged, want) {
					t.Errorf("files_changed %q, want %q", fin.FilesChanged, want)
				}
				patch, _ := os.ReadFile(filepath.Join(runDir, "diff.patch"))
				if !strings.Contains(string(patch), "+++ b/lib/a.go") || !strings.Contains(string(patch), "+++ b/src\n") {
					t.Errorf("diff.patch lacks the additions:\n%s", patch)
				}
			},
		},
		{
			name:    "base dir replaced by an escaping link",
			files:   map[string]string{"src/a.go": "package a\n", "README": "r\n"},
			command: "rm -rf src && ln -s /root src && ln -s c b && ln -s /etc c",
			check: func(t *testing.T, fin sandbox.Finalization, lane, runDir string) {
				// The worker's links out of the tree are taken out and
				// listed (b, which led out through c, now leads nowhere).
				if want := []string{"c", "src"}; !slices.Equal(sorted(fin.EscapingSymlinks), want) {
					t.Errorf("escaping_symlinks %q, want %q", fin.EscapingSymlinks, want)
				}
				for _, n := range []string{"src", "c"} {
					if _, err := os.Lstat(filepath.Join(lane, n)); !os.IsNotExist(err) {
						t.Errorf("%s is in the lane: %v", n, err)
					}
				}
			},
		},
		{
			name: "FIFO, socket and hard links",
			command: `mkfifo pipe && python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("sock")' &&
				head -c 4096 /dev/urandom > f && ln f g && mkdir d && ln f d/h`,
			check: func(t *testing.T, fin sandbox.Finalization, lane, runDir string) {
				if !slices.Equal(fin.SkippedSpecialEntries, []string{"pipe"}) && !slices.Equal(sorted(fin.SkippedSpecialEntries), []string{"pipe", "sock"}) {
					t.Errorf("skipped_special_entries %q", fin.SkippedSpecialEntries)
				}
				var f, g, h syscall.Stat_t
				if syscall.Lstat(filepath.Join(lane, "f"), &f) != nil || syscall.Lstat(filepath.Join(lane, "g"), &g) != nil ||
					syscall.Lstat(filepath.Join(lane, "d/h"), &h) != nil || f.Ino != g.Ino || f.Ino != h.Ino || f.Nlink != 3 {
					t.Errorf("f, g and d/h are not one file: inodes %d %d %d, %d links", f.Ino, g.Ino, h.Ino, f.Nlink)
				}
				for _, n := range []string{"pipe", "sock"} {
					if _, err := os.Lstat(filepath.Join(lane, n)); !os.IsNotExist(err) {
						t.Errorf("%s in the lane: %v", n, err)
					}
				}
			},
		},
		{
			// Second names of members the export leaves out get their
			// fate, listed as they are; nothing fails the export.
			name: "hard links to dropped and skipped members",
			command: `mkdir -p .git sub/.GIT && echo x > .git/f && ln .git/f zz && echo y > sub/.GIT/g && ln sub/.GIT/g sub/zz &&
				mkfifo pipe && ln pipe pipe2 &&
				mkdir -p repo/objects repo/refs && echo 'ref: refs/heads/main' > repo/HEAD &&
				printf '[core]\n\tfsmonitor = false\n' > repo/config && ln repo/config zconfig && ln zconfig zconfig2 &&
				echo kept > kept.txt && ln kept.txt kept2.txt`,
			check: func(t *testing.T, fin sandbox.Finalization, lane, runDir string) {
				want := []string{".git", "repo", "sub/.GIT", "sub/zz", "zconfig", "zconfig2", "zz"}
				if got := sorted(fin.DroppedGitEntries); !slices.Equal(got, want) {
					t.Errorf("dropped_git_entries %q, want %q", got, want)
				}
				if got := sorted(fin.SkippedSpecialEntries); !slices.Equal(got, []string{"pipe", "pipe2"}) {
					t.Errorf("skipped_special_entries %q", got)
				}
				for _, n := range []string{"sub/.GIT", "zz", "sub/zz", "pipe", "pipe2", "repo", "zconfig", "zconfig2"} {
					if _, err := os.Lstat(filepath.Join(lane, n)); !os.IsNotExist(err) {
						t.Errorf("%s in the lane: %v", n, err)
					}
				}
				// Taken out with the repository before verify, kept as the
				// archive the daemon handed out.
				if idx := readFile(t, filepath.Join(runDir, QuarantineDir, "index.json")); !strings.Contains(idx, `"path": "zconfig"`) {
					t.Errorf("zconfig is not in the quarantine: %s", idx)
				}
				for _, n := range []string{"kept.txt", "kept2.txt", "a.txt"} {
					if _, err := os.Stat(filepath.Join(lane, n)); err != nil {
						t.Errorf("%s: %v", n, err)
					}
				}
				if want := []string{"kept.txt", "kept2.txt"}; !slices.Equal(fin.FilesChanged, want) {
					t.Errorf("files_changed %q, want %q", fin.FilesChanged, want)
				}
			},
		},
		{
			name:    "unreadable directory",
			command: "mkdir locked && echo x > locked/f && chmod 000 locked",
			check: func(t *testing.T, fin sandbox.Finalization, lane, runDir string) {
				if b, err := os.ReadFile(filepath.Join(lane, "locked/f")); err != nil || string(b) != "x\n" {
					t.Errorf("locked/f %q, %v", b, err)
				}
			},
		},
		{
			// 500 names of one 100 MB file fit a 150 MB cap: its bytes
			// count once, in the sandbox's budget and in the export.
			name:    "hard link bomb",
			command: "head -c 100M /dev/urandom > big && for i in $(seq 500); do ln big l$i; done",
			limits:  sandbox.Limits{MaxBytes: 150 << 20, MaxEntries: 5000},
			check: func(t *testing.T, fin sandbox.Finalization, lane, runDir string) {
				if fin.WorktreeBytes < 100<<20 || fin.WorktreeBytes > 101<<20 || fin.WorktreeFiles < 502 {
					t.Errorf("worktree_bytes %d, files %d", fin.WorktreeBytes, fin.WorktreeFiles)
				}
				var st syscall.Stat_t
				if err := syscall.Lstat(filepath.Join(lane, "l500"), &st); err != nil || st.Nlink != 501 {
					t.Errorf("l500: %d links, %v", st.Nlink, err)
				}
			},
		},
		{
			// Past PATH_MAX: the daemon cannot read it, so the export
			// says so.
			name:    "path past PATH_MAX",
			command: `n=$(printf 'd%.0s' $(seq 200)); for i in $(seq 25); do mkdir "$n" && cd "$n" || exit 1; done; echo deep > deep.txt`,
			check: func(t *testing.T, fin sandbox.Finalization, lane, runDir string) {
				comp := strings.Repeat("d", 200)
				p := strings.TrimSuffix(strings.Repeat(comp+"/", 25), "/") + "/deep.txt"
				out, err := exec.Command("bash", "-c", `cd "$1" && for i in $(seq 25); do cd "$2" || exit 1; done && cat deep.txt`, "bash", lane, comp).Output()
				exported := err == nil && string(out) == "deep\n"
				if exported != slices.Contains(fin.FilesChanged, p) {
					t.Errorf("deep.txt in the lane %v, in files_changed %v", exported, slices.Contains(fin.FilesChanged, p))
				}
				if !exported && !slices.Equal(fin.UnexportedEntries, []string{p}) {
					t.Errorf("deep.txt is neither exported nor in unexported_entries (%d entries)", len(fin.UnexportedEntries))
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runExportCase(t, c) })
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// readFile is the file's content, "" when it cannot be read.
func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return string(data)
}

// tarNames are the member names of the archive at p.
func tarNames(t *testing.T, p string) []string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var names []string
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			return names
		}
		names = append(names, strings.TrimSuffix(h.Name, "/"))
	}
}
