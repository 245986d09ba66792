package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// -update rewrites the hashes in every repos/*/bench.json from the files.
var update = flag.Bool("update", false, "rewrite the acceptance hashes in repos/*/bench.json")

// The fixtures the issue asks for, one of each kind.
var wantFixtures = []string{
	"big-inventory", // a 20,000-file tree generated at staging
	"go-roman",      // a Go function with a failing test
	"http-pages",    // acceptance needs a background process
	"node-top",      // a Node CLI flag
	"py-rename",     // a multi-file rename
	"py-slug",       // a bug that needs a test read to understand
	"py-windows",    // a Python off-by-one
	"sh-report",     // a shell script's output format
}

func TestFixturesLoad(t *testing.T) {
	t.Parallel()
	fixtures, err := Load(Repos())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fixtures {
		names = append(names, f.Name)
		visible, err := VisibleFiles(f.FS)
		if err != nil {
			t.Fatal(err)
		}
		if len(visible) > MaxVisibleFiles || !slices.Contains(visible, SpecFile) {
			t.Errorf("%s shows the worker %v", f.Name, visible)
		}
		if !strings.HasPrefix(f.Acceptance.Command, "/usr/bin/python3 -I -S ") {
			t.Errorf("%s: the checker does not run in an isolated interpreter: %q", f.Name, f.Acceptance.Command)
		}
		if strings.TrimSpace(f.Task) == "" {
			t.Errorf("%s has no task", f.Name)
		}
	}
	if !slices.Equal(names, wantFixtures) {
		t.Errorf("fixtures %v, want %v", names, wantFixtures)
	}
}

// Every bench.json hash matches its file, and every file under
// acceptance/ has one (with -update: make it so).
func TestFixtureHashesInSync(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("repos", "*", SpecFile))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures on disk: %v", err)
	}
	for _, specPath := range dirs {
		dir := filepath.Dir(specPath)
		raw, err := os.ReadFile(specPath)
		if err != nil {
			t.Fatal(err)
		}
		var s spec
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("%s: %v", specPath, err)
		}
		fsys := os.DirFS(dir)
		want := map[string]string{}
		err = fs.WalkDir(fsys, AcceptanceDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			want[p], err = FileHash(fsys, p)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			s.Acceptance.Hashes = want
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			if err := enc.Encode(s); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(specPath, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		for p, sum := range want {
			if s.Acceptance.Hashes[p] != sum {
				t.Errorf("%s: %s has SHA-256 %s, bench.json says %q (go test ./bench -run TestFixtureHashesInSync -update)", dir, p, sum, s.Acceptance.Hashes[p])
			}
		}
		for p := range s.Acceptance.Hashes {
			if _, ok := want[p]; !ok {
				t.Errorf("%s: bench.json hashes %s, which is not there", dir, p)
			}
		}
	}
}

// validFixture is a fixture that loads; tests break one thing at a time.
func validFixture() fstest.MapFS {
	check := []byte("print('ok')\n")
	sum, _ := FileHash(fstest.MapFS{"c": {Data: check}}, "c")
	return fstest.MapFS{
		"bench.json":          {Data: []byte(`{"task": "do it", "acceptance": {"command": "/usr/bin/python3 -I -S /acceptance/check.py", "hashes": {"acceptance/check.py": "` + sum + `"}}}`)},
		"acceptance/check.py": {Data: check},
		"main.py":             {Data: []byte("x = 1\n")},
		"solution/main.py":    {Data: []byte("x = 2\n")},
	}
}

// withSpec is validFixture with bench.json replaced by edit of it.
func withSpec(edit func(s string) string) fstest.MapFS {
	fsys := validFixture()
	fsys["bench.json"] = &fstest.MapFile{Data: []byte(edit(string(fsys["bench.json"].Data)))}
	return fsys
}

func TestLoadFixtureRefuses(t *testing.T) {
	t.Parallel()
	if _, err := LoadFixture("ok", validFixture()); err != nil {
		t.Fatalf("the valid fixture: %v", err)
	}
	replace := func(old, new string) func(string) string {
		return func(s string) string { return strings.Replace(s, old, new, 1) }
	}
	tests := []struct {
		name string
		task string
		fsys fstest.MapFS
		want string
	}{
		{"bad name", "Bad_Name", validFixture(), "the name must match"},
		{"no bench.json", "x", func() fstest.MapFS { f := validFixture(); delete(f, "bench.json"); return f }(), "bench.json"},
		{"not JSON", "x", withSpec(func(string) string { return "{" }), "bench.json"},
		{"unknown key", "x", withSpec(replace(`"task"`, `"tusk": 1, "task"`)), "unknown field"},
		{"no task", "x", withSpec(replace(`"do it"`, `" "`)), "no task"},
		{"no command", "x", withSpec(replace(`/usr/bin/python3 -I -S /acceptance/check.py`, ``)), "no acceptance command"},
		{"worktree-relative command", "x", withSpec(replace(`/acceptance/check.py`, `acceptance/check.py`)), `"acceptance/check.py"`},
		{"dot-relative command", "x", withSpec(replace(`/acceptance/check.py`, `./acceptance/check.py`)), "never a worktree path"},
		{"the worker's copy", "x", withSpec(replace(`/acceptance/check.py`, `/work/acceptance/check.py`)), "never a worktree path"},
		{"no checker named", "x", withSpec(replace(`/acceptance/check.py`, `/bin/true`)), "names no file under /acceptance/"},
		{"no hashes", "x", withSpec(func(s string) string { return s[:strings.Index(s, `"hashes"`)] + `"hashes": {}}}` }), "no acceptance hashes"},
		{"hash outside acceptance", "x", withSpec(replace(`"acceptance/check.py":`, `"main.py":`)), "not a clean path under acceptance/"},
		{"hash with dots", "x", withSpec(replace(`"acceptance/check.py":`, `"acceptance/../main.py":`)), "not a clean path"},
		{"bad digest", "x", withSpec(func(s string) string { return strings.Replace(s, `": "`, `": "XY`, 3) }), "not a SHA-256"},
		{"hash mismatch", "x", func() fstest.MapFS {
			f := validFixture()
			f["acceptance/check.py"] = &fstest.MapFile{Data: []byte("print('changed')\n")}
			return f
		}(), "bench.json says"},
		{"unhashed checker file", "x", func() fstest.MapFS {
			f := validFixture()
			f["acceptance/helper.py"] = &fstest.MapFile{Data: []byte("\n")}
			return f
		}(), "acceptance/helper.py has no hash"},
		{"too many files", "x", func() fstest.MapFS {
			f := validFixture()
			for _, n := range []string{"a", "b", "c"} {
				f[n] = &fstest.MapFile{Data: []byte(n)}
			}
			return f
		}(), "6 files outside solution/"},
		{"no solution", "x", func() fstest.MapFS { f := validFixture(); delete(f, "solution/main.py"); return f }(), "no reference solution"},
		{"unknown generator", "x", withSpec(replace(`"task"`, `"generate": "nope", "task"`)), `no generator "nope"`},
		{"a link", "x", func() fstest.MapFS {
			f := validFixture()
			f["link"] = &fstest.MapFile{Data: []byte("main.py"), Mode: fs.ModeSymlink}
			return f
		}(), "link is not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := LoadFixture(tt.task, tt.fsys)
			if !errors.Is(err, ErrInvalidFixture) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadFixture = %v, want ErrInvalidFixture saying %q", err, tt.want)
			}
		})
	}
}

// Load takes the subdirectories with a bench.json, sorted, and returns the
// valid ones beside an error naming the others.
func TestLoadKeepsTheValidOnes(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"README.md": {Data: []byte("not a task\n")}, "notes/x.txt": {Data: []byte("no bench.json\n")}}
	for _, name := range []string{"zeta", "alpha", "broken"} {
		f := validFixture()
		if name == "broken" {
			delete(f, "solution/main.py")
		}
		for p, file := range f {
			fsys[name+"/"+p] = file
		}
	}
	fixtures, err := Load(fsys)
	if !errors.Is(err, ErrInvalidFixture) || !strings.Contains(err.Error(), "broken") {
		t.Errorf("Load error = %v, want one naming broken", err)
	}
	var names []string
	for _, f := range fixtures {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"alpha", "zeta"}) {
		t.Errorf("fixtures %v, want [alpha zeta]", names)
	}
}

func TestCommandPaths(t *testing.T) {
	t.Parallel()
	for command, ok := range map[string]bool{
		"/usr/bin/python3 -I -S /acceptance/check.py":          true,
		`/bin/sh -c "/acceptance/run.sh --data=/acceptance/d"`: true,
		"node '/acceptance/check.js'":                          true,
		"python3 acceptance/check.py":                          false,
		"python3 ./acceptance/check.py":                        false,
		"cd /work && /acceptance/a.sh acceptance/b":            false,
		"/bin/true": false,
		"/usr/bin/python3 /work/acceptance/check.py": false,
	} {
		if err := checkCommandPaths(command); (err == nil) != ok {
			t.Errorf("checkCommandPaths(%q) = %v, want ok %v", command, err, ok)
		}
	}
}
