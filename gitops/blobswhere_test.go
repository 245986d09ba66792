package gitops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBlobsWhere(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	commitFile(t, dir, "package-lock.json", `{"resolved": "https://registry.npmjs.org/a.tgz"}`)
	commitFile(t, dir, "web/yarn.lock", "yarn\n")
	commitFile(t, dir, "big/Cargo.lock", strings.Repeat("x", 100))
	commitFile(t, dir, "src/main.go", "package main\n")
	if err := os.Symlink("package-lock.json", filepath.Join(dir, "go.sum")); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "add", "go.sum")
	gitT(t, dir, "commit", "-q", "-m", "link")
	base := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
	// Work after the commit is not what is read.
	writeFile(t, filepath.Join(dir, "web", "yarn.lock"), "edited on disk\n")
	commitFile(t, dir, "Gemfile.lock", "later\n")

	wanted := map[string]bool{"package-lock.json": true, "web/yarn.lock": true, "big/Cargo.lock": true, "go.sum": true, "Gemfile.lock": true}
	got, err := New().BlobsWhere(t.Context(), dir, base, 50, func(p string) bool { return wanted[p] })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got["web/yarn.lock"]) != "yarn\n" || !strings.Contains(string(got["package-lock.json"]), "registry.npmjs.org") {
		t.Fatalf("BlobsWhere = %q", got)
	}
	none, err := New().BlobsWhere(t.Context(), dir, base, 50, func(string) bool { return false })
	if err != nil || len(none) != 0 {
		t.Fatalf("nothing wanted: %q, %v", none, err)
	}
}
