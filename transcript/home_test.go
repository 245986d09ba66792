package transcript

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHomeOverride(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(HomeEnv, dir)

	home, err := Home()
	if err != nil {
		t.Fatalf("Home: %v", err)
	}
	if home != dir {
		t.Errorf("Home() = %q, want %q", home, dir)
	}
	runs, err := RunsRoot()
	if err != nil || runs != filepath.Join(dir, "runs") {
		t.Errorf("RunsRoot() = %q, %v; want %q", runs, err, filepath.Join(dir, "runs"))
	}
	bench, err := BenchRoot()
	if err != nil || bench != filepath.Join(dir, "bench") {
		t.Errorf("BenchRoot() = %q, %v; want %q", bench, err, filepath.Join(dir, "bench"))
	}
}

func TestHomeRelativeOverrideIsMadeAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv(HomeEnv, "rel/home")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}

	home, err := Home()
	if err != nil {
		t.Fatalf("Home: %v", err)
	}
	if want := filepath.Join(wd, "rel", "home"); home != want {
		t.Errorf("Home() = %q, want %q", home, want)
	}
}

func TestHomeDefaultsUnderUserHome(t *testing.T) {
	userHome := t.TempDir()
	t.Setenv(HomeEnv, "") // set but empty means unset
	t.Setenv("HOME", userHome)

	home, err := Home()
	if err != nil {
		t.Fatalf("Home: %v", err)
	}
	if want := filepath.Join(userHome, ".dirtywork"); home != want {
		t.Errorf("Home() = %q, want %q", home, want)
	}
	runs, err := RunsRoot()
	if err != nil || runs != filepath.Join(userHome, ".dirtywork", "runs") {
		t.Errorf("RunsRoot() = %q, %v", runs, err)
	}
}

func TestEnsureRunsRootFixesHomeAndRuns(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(HomeEnv, home)

	runs, err := EnsureRunsRoot()
	if err != nil {
		t.Fatalf("EnsureRunsRoot: %v", err)
	}
	if runs != filepath.Join(home, "runs") {
		t.Errorf("EnsureRunsRoot() = %q", runs)
	}
	checkMode(t, home, fs.ModeDir|0o700)
	checkMode(t, runs, fs.ModeDir|0o700)

	bench, err := EnsureBenchRoot()
	if err != nil {
		t.Fatalf("EnsureBenchRoot: %v", err)
	}
	checkMode(t, bench, fs.ModeDir|0o700)
}

func TestEnsureDir(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, path string)
		wantErr string // substring; "" means success
	}{
		{
			name:  "creates missing directory and parents",
			setup: func(t *testing.T, path string) {},
		},
		{
			name: "strips group and other bits",
			setup: func(t *testing.T, path string) {
				seedDir(t, path)
				if err := os.Chmod(path, 0o755); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "refuses a symlink to a directory",
			setup: func(t *testing.T, path string) {
				target := filepath.Join(t.TempDir(), "real")
				seedDir(t, target)
				seedDir(t, filepath.Dir(path))
				seedSymlink(t, target, path)
			},
			wantErr: "is a symlink",
		},
		{
			name: "refuses a dangling symlink",
			setup: func(t *testing.T, path string) {
				seedDir(t, filepath.Dir(path))
				seedSymlink(t, filepath.Join(t.TempDir(), "gone"), path)
			},
			wantErr: "is a symlink",
		},
		{
			name: "refuses a file",
			setup: func(t *testing.T, path string) {
				seedDir(t, filepath.Dir(path))
				seedFile(t, path, "x")
			},
			wantErr: "is not a directory",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "parent", "dir")
			tt.setup(t, path)

			err := EnsureDir(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("EnsureDir() error = %v, want one containing %q", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("error %q does not name %s", err, path)
				}
				return
			}
			if err != nil {
				t.Fatalf("EnsureDir: %v", err)
			}
			checkMode(t, path, fs.ModeDir|0o700)
		})
	}
}

func TestEnsureDirRefusesForeignOwner(t *testing.T) {
	var path string
	if os.Getuid() == 0 {
		path = filepath.Join(t.TempDir(), "foreign")
		seedDir(t, path)
		if err := os.Chown(path, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	} else {
		// Without privileges to give a directory away, use one that root owns.
		path = "/"
	}
	err := EnsureDir(path)
	if err == nil || !strings.Contains(err.Error(), "owned by uid") {
		t.Fatalf("EnsureDir(%s) error = %v, want an ownership refusal", path, err)
	}
}

func checkMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode(); got != want {
		t.Errorf("mode of %s = %v, want %v", path, got, want)
	}
}

func seedDir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o700); err != nil {
		t.Fatal(err)
	}
}

func seedSymlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

func seedFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
