package docker

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// noEngine is an engine that must not be called.
func noEngine(t *testing.T) *Client {
	t.Helper()
	return newFakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected Engine API call %s %s", r.Method, r.URL.Path)
		engineError(w, http.StatusInternalServerError, "unexpected")
	})
}

// BootstrapBase refuses before it creates anything when it cannot work:
// not root, or no debootstrap. These tests swap package seams, so they do
// not run in parallel.
func TestBootstrapBaseRefusals(t *testing.T) {
	tests := []struct {
		name     string
		euid     int
		lookPath func(string) (string, error)
		want     error
	}{
		{"not root", 1000, func(string) (string, error) { return "/usr/sbin/debootstrap", nil }, ErrNeedsRoot},
		{"no debootstrap", 0, func(name string) (string, error) { return "", errors.New(name + ": not in PATH") }, ErrNoDebootstrap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldEuid, oldLook := geteuid, lookPath
			t.Cleanup(func() { geteuid, lookPath = oldEuid, oldLook })
			geteuid = func() int { return tt.euid }
			lookPath = tt.lookPath
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)

			_, err := noEngine(t).BootstrapBase(t.Context(), "dirtywork-base:test", io.Discard)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error = %v, want %v", err, tt.want)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("a refused bootstrap left %v in TMPDIR", left)
			}
		})
	}
}

// importTree streams a directory into an image import: the daemon gets
// the tree as tar, the tag and the PATH every container needs.
func TestImportTree(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "etc", "os-release"), "ID=debian\n")
	var (
		mu  sync.Mutex // the handler runs on the server's goroutine
		got struct {
			fromSrc, repo string
			changes       []string
			names         []string
		}
	)
	cl := newFakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/images/create" {
			engineError(w, http.StatusNotImplemented, "unexpected "+r.URL.Path)
			return
		}
		q := r.URL.Query()
		got.fromSrc, got.repo, got.changes = q.Get("fromSrc"), q.Get("repo"), q["changes"]
		entries, _, err := readEntries(r.Body)
		if err != nil {
			t.Errorf("imported tar: %v", err)
		}
		for name := range entries {
			got.names = append(got.names, name)
		}
		_, _ = io.WriteString(w, `{"status":"sha256:imported"}`+"\n")
	})
	var progress strings.Builder
	id, err := cl.importTree(t.Context(), "dirtywork-base:test", dir, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if id != "sha256:imported" {
		t.Errorf("id = %q", id)
	}
	mu.Lock()
	defer mu.Unlock()
	if got.fromSrc != "-" || got.repo != "dirtywork-base:test" {
		t.Errorf("import from %q as %q, want from the request body as dirtywork-base:test", got.fromSrc, got.repo)
	}
	if !slices.Contains(got.changes, "ENV "+pathEnv) {
		t.Errorf("changes = %q, want the PATH", got.changes)
	}
	slices.Sort(got.names)
	if want := []string{"./", "./etc/", "./etc/os-release"}; !slices.Equal(got.names, want) {
		t.Errorf("imported %q, want %q", got.names, want)
	}
}

// A tree that cannot be read fails the import with the reading error, not
// with the broken upload it causes.
func TestImportTreeReportsTheArchiveError(t *testing.T) {
	cl := newFakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		engineError(w, http.StatusInternalServerError, "unexpected EOF")
	})
	missing := filepath.Join(t.TempDir(), "no-such-rootfs")
	_, err := cl.importTree(t.Context(), "dirtywork-base:test", missing, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "archive "+missing) {
		t.Fatalf("error = %v, want the archive error naming %s", err, missing)
	}
}
