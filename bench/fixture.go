package bench

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
)

// repos holds the fixtures under repos/<task>/, built into the binary so a
// sweep needs no checkout.
//
//go:embed repos
var repos embed.FS

// Repos is the file system of the fixtures this build carries: one
// directory per task (B-1).
func Repos() fs.FS {
	sub, err := fs.Sub(repos, "repos")
	if err != nil {
		panic(err) // "repos" is a valid path; fs.Sub fails on nothing else
	}
	return sub
}

// Layout of a fixture directory.
const (
	// SpecFile is the fixture's description (B-1).
	SpecFile = "bench.json"
	// AcceptanceDir holds the checker: committed in the fixture, so the
	// worker sees it, and hashed, so a worker that changed its copy is
	// found out. The scorer mounts the fixture's own copy at /acceptance.
	AcceptanceDir = "acceptance"
	// SolutionDir holds the reference solution: the files that, laid over
	// the staged tree, solve the task. It is never staged.
	SolutionDir = "solution"
	// MaxVisibleFiles is the most files a worker may be shown (B-1),
	// bench.json included; solution/ and a generated tree are not counted.
	MaxVisibleFiles = 5
)

// storedSuffix ends the name a fixture file is kept under when its own
// name would make it part of this repository's build: a Go file would be
// built and tested with dirtywork (a fixture is shipped unsolved, its test
// failing), and the toolchain will not embed a directory holding a go.mod
// (it would be another module). The file is staged without the suffix.
const storedSuffix = ".fixture"

// taskName is what a fixture directory may be called: it becomes part of
// temporary directory names and run slugs.
var taskName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,40}$`)

// sha256Hex is a digest as bench.json writes it.
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Fixture is one bench task: a small repository, the prompt that asks for
// a change to it, and the acceptance check that decides whether the change
// was made.
type Fixture struct {
	// Name is the directory's name, the task's id.
	Name string
	// Task is the prompt a run is given (bench.json "task").
	Task string
	// Acceptance is how the result is checked.
	Acceptance AcceptanceSpec
	// Generate names a generator that adds files at staging (see
	// Generators), "" for none: a tree too large to commit here.
	Generate string
	// FS is the fixture's directory.
	FS fs.FS
}

// AcceptanceSpec is a fixture's acceptance block (B-1).
type AcceptanceSpec struct {
	// Command runs in /work of the acceptance container, with the
	// fixture's acceptance/ at /acceptance; exit 0 is a pass.
	Command string `json:"command"`
	// Hashes are the SHA-256 digests (hex) of the files under acceptance/,
	// by path relative to the fixture: the worker's copies must still
	// match them.
	Hashes map[string]string `json:"hashes"`
}

// spec is bench.json.
type spec struct {
	Task       string         `json:"task"`
	Acceptance AcceptanceSpec `json:"acceptance"`
	Generate   string         `json:"generate,omitempty"`
}

// ErrInvalidFixture is a fixture that breaks the rules of B-1.
var ErrInvalidFixture = errors.New("invalid fixture")

// Load reads the fixtures of fsys: its subdirectories that hold a
// bench.json, sorted by name (B-1). Each is validated (see LoadFixture);
// the fixtures that are valid are returned even when others are not, and
// the error then names every one that is not.
func Load(fsys fs.FS) ([]Fixture, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("list fixtures: %w", err)
	}
	var fixtures []Fixture
	var errs []error
	for _, e := range entries { // ReadDir sorts by name
		if !e.IsDir() {
			continue
		}
		if _, err := fs.Stat(fsys, path.Join(e.Name(), SpecFile)); err != nil {
			continue
		}
		sub, err := fs.Sub(fsys, e.Name())
		if err == nil {
			var f Fixture
			if f, err = LoadFixture(e.Name(), sub); err == nil {
				fixtures = append(fixtures, f)
				continue
			}
		}
		errs = append(errs, err)
	}
	return fixtures, errors.Join(errs...)
}

// LoadFixture reads and validates the fixture called name in fsys: a
// task name, a bench.json with a task, an acceptance command that names
// its files under /acceptance/ (never worktree-relative) and a hash for
// every file under acceptance/ that matches it; at most MaxVisibleFiles
// files outside solution/; a non-empty solution/; a known generator.
func LoadFixture(name string, fsys fs.FS) (Fixture, error) {
	invalid := func(format string, args ...any) (Fixture, error) {
		return Fixture{}, fmt.Errorf("%w %s: %s", ErrInvalidFixture, name, fmt.Sprintf(format, args...))
	}
	if !taskName.MatchString(name) {
		return invalid("the name must match %s", taskName)
	}
	raw, err := fs.ReadFile(fsys, SpecFile)
	if err != nil {
		return invalid("%v", err)
	}
	var s spec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return invalid("%s: %v", SpecFile, err)
	}
	if strings.TrimSpace(s.Task) == "" {
		return invalid("%s has no task", SpecFile)
	}
	if err := s.Acceptance.Validate(); err != nil {
		return invalid("%v", err)
	}
	if s.Generate != "" && Generators[s.Generate] == nil {
		return invalid("no generator %q", s.Generate)
	}
	if err := checkFiles(fsys, s.Acceptance.Hashes); err != nil {
		return invalid("%v", err)
	}
	return Fixture{Name: name, Task: s.Task, Acceptance: s.Acceptance, Generate: s.Generate, FS: fsys}, nil
}

// Validate checks the block's shape, without reading any file: a command
// whose paths are under /acceptance/, at least one hash, every hashed path
// a clean path under acceptance/ with a SHA-256 digest.
func (a AcceptanceSpec) Validate() error {
	if strings.TrimSpace(a.Command) == "" {
		return errors.New("no acceptance command")
	}
	if err := checkCommandPaths(a.Command); err != nil {
		return err
	}
	if len(a.Hashes) == 0 {
		return errors.New("no acceptance hashes")
	}
	for p, sum := range a.Hashes {
		if !fs.ValidPath(p) || !strings.HasPrefix(p, AcceptanceDir+"/") {
			return fmt.Errorf("hashed path %q is not a clean path under %s/", p, AcceptanceDir)
		}
		if !sha256Hex.MatchString(sum) {
			return fmt.Errorf("hash of %s is not a SHA-256 in lower-case hex", p)
		}
	}
	return nil
}

// checkCommandPaths checks that every path of command into acceptance/ is
// the read-only mount's, /acceptance/…: the worker's copy (acceptance/…,
// ./acceptance/…, /work/acceptance/…) is the worker's to change.
func checkCommandPaths(command string) error {
	found := false
	for i := 0; ; {
		j := strings.Index(command[i:], AcceptanceDir+"/")
		if j < 0 {
			break
		}
		at := i + j
		mount := at > 0 && command[at-1] == '/' && (at == 1 || strings.ContainsRune(" \t=\"':", rune(command[at-2])))
		if !mount {
			start := strings.LastIndexAny(command[:at], " \t") + 1
			end := strings.IndexAny(command[at:], " \t")
			if end < 0 {
				end = len(command) - at
			}
			return fmt.Errorf("acceptance command names %q: use /acceptance/…, never a worktree path", command[start:at+end])
		}
		found = true
		i = at + len(AcceptanceDir) + 1
	}
	if !found {
		return errors.New("the acceptance command names no file under /acceptance/")
	}
	return nil
}

// HashPaths are the hashed paths, sorted.
func (a AcceptanceSpec) HashPaths() []string {
	return slices.Sorted(maps.Keys(a.Hashes))
}

// checkFiles checks the fixture's files against hashes and the file rules.
func checkFiles(fsys fs.FS, hashes map[string]string) error {
	visible, err := VisibleFiles(fsys)
	if err != nil {
		return err
	}
	if len(visible) > MaxVisibleFiles {
		return fmt.Errorf("%d files outside %s/ (at most %d): %s", len(visible), SolutionDir, MaxVisibleFiles, strings.Join(visible, ", "))
	}
	for _, p := range visible {
		if strings.HasPrefix(p, AcceptanceDir+"/") && hashes[p] == "" {
			return fmt.Errorf("%s has no hash in %s (a checker file is kept under its own name)", p, SpecFile)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(hashes)) {
		sum, err := FileHash(fsys, p)
		if err != nil {
			return fmt.Errorf("hashed file: %w", err)
		}
		if sum != hashes[p] {
			return fmt.Errorf("%s has SHA-256 %s, %s says %s", p, sum, SpecFile, hashes[p])
		}
	}
	solution, err := fs.ReadDir(fsys, SolutionDir)
	if err != nil || len(solution) == 0 {
		return fmt.Errorf("no reference solution in %s/", SolutionDir)
	}
	return nil
}

// VisibleFiles are the paths of the fixture's files a worker is shown, as
// staged (a file kept as <name>.fixture is <name>), sorted: every regular
// file outside solution/. Anything but regular files and directories is an
// error: a fixture is plain files.
func VisibleFiles(fsys fs.FS) ([]string, error) {
	var files []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case p == SolutionDir && d.IsDir():
			return fs.SkipDir
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", p)
		}
		files = append(files, stagedName(p))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list fixture files: %w", err)
	}
	slices.Sort(files)
	return files, nil
}

// stagedName is the path a fixture file is staged at.
func stagedName(p string) string {
	return strings.TrimSuffix(p, storedSuffix)
}

// FileHash is the SHA-256 (hex) of the file p of fsys.
func FileHash(fsys fs.FS, p string) (string, error) {
	b, err := fs.ReadFile(fsys, p)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
