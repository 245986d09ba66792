package transcript

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCreateRunDir(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "home", "runs")

	dir, err := CreateRunDir(runs, "fix-bug-0814110900-ab1200ff")
	if err != nil {
		t.Fatalf("CreateRunDir: %v", err)
	}
	if want := filepath.Join(runs, "fix-bug-0814110900-ab1200ff"); dir != want {
		t.Errorf("CreateRunDir() = %q, want %q", dir, want)
	}
	checkMode(t, runs, fs.ModeDir|0o700)
	checkMode(t, dir, fs.ModeDir|0o700)
}

func TestCreateRunDirCollision(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"directory", func(t *testing.T, path string) { seedDir(t, path) }},
		{"empty file", func(t *testing.T, path string) { seedFile(t, path, "") }},
		{"symlink to a directory", func(t *testing.T, path string) { seedSymlink(t, t.TempDir(), path) }},
		{"dangling symlink", func(t *testing.T, path string) {
			seedSymlink(t, filepath.Join(t.TempDir(), "gone"), path)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := t.TempDir()
			path := filepath.Join(runs, "taken")
			tt.setup(t, path)
			before, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}

			_, err = CreateRunDir(runs, "taken")
			if !errors.Is(err, ErrSlugCollision) {
				t.Fatalf("CreateRunDir() error = %v, want ErrSlugCollision", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			after, err := os.Lstat(path)
			if err != nil || after.Mode() != before.Mode() {
				t.Errorf("the entry in the way changed: %v, %v -> %v", err, before.Mode(), after.Mode())
			}
		})
	}
}

func TestCreateRunDirInvalidSlug(t *testing.T) {
	base := t.TempDir()
	runs := filepath.Join(base, "runs")
	for _, slug := range []string{"", ".", "..", "../escape", "a/b", "-x"} {
		if _, err := CreateRunDir(runs, slug); !errors.Is(err, ErrInvalidSlug) {
			t.Errorf("CreateRunDir(%q) error = %v, want ErrInvalidSlug", slug, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(base, "escape")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a slug escaped the runs root: %v", err)
	}
}

func TestCreateRunDirRefusesSymlinkedRoot(t *testing.T) {
	base := t.TempDir()
	runs := filepath.Join(base, "runs")
	seedSymlink(t, t.TempDir(), runs)

	_, err := CreateRunDir(runs, "a")
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("CreateRunDir() error = %v, want a symlink refusal", err)
	}
}

func TestRunDirPath(t *testing.T) {
	runs := t.TempDir()
	seedDir(t, filepath.Join(runs, "real"))
	seedSymlink(t, t.TempDir(), filepath.Join(runs, "outside"))
	seedSymlink(t, filepath.Join(runs, "real"), filepath.Join(runs, "sibling"))

	tests := []struct {
		slug    string
		wantErr error
	}{
		{"real", nil},
		{"absent", nil},
		{"sibling", nil}, // resolves to runs/real: still directly under the root
		{"outside", ErrInvalidSlug},
		{"../real", ErrInvalidSlug},
	}
	for _, tt := range tests {
		got, err := RunDirPath(runs, tt.slug)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("RunDirPath(%q) error = %v, want %v", tt.slug, err, tt.wantErr)
			continue
		}
		if tt.wantErr == nil && got != filepath.Join(runs, tt.slug) {
			t.Errorf("RunDirPath(%q) = %q", tt.slug, got)
		}
	}
}

func TestFindRunDir(t *testing.T) {
	runs := t.TempDir()
	seedDir(t, filepath.Join(runs, "present"))
	seedFile(t, filepath.Join(runs, "file"), "x")

	got, err := FindRunDir(runs, "present")
	if err != nil || got != filepath.Join(runs, "present") {
		t.Errorf("FindRunDir(present) = %q, %v", got, err)
	}

	_, err = FindRunDir(runs, "absent")
	if !errors.Is(err, ErrNoSuchRun) {
		t.Fatalf("FindRunDir(absent) error = %v, want ErrNoSuchRun", err)
	}
	if want := "no such run 'absent' under " + runs; err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}

	if _, err := FindRunDir(runs, "file"); err == nil || errors.Is(err, ErrNoSuchRun) {
		t.Errorf("FindRunDir(file) error = %v, want a not-a-directory error", err)
	}
	if _, err := FindRunDir(runs, ".."); !errors.Is(err, ErrInvalidSlug) {
		t.Errorf("FindRunDir(..) error = %v, want ErrInvalidSlug", err)
	}
}
