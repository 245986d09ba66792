package gitops

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadConventions(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é", 40000) // 2 bytes each: cut by characters, not bytes
	tests := []struct {
		name          string
		setup         func(t *testing.T, dir string)
		wantName      string
		wantText      string
		wantTruncated bool
	}{
		{"none", func(t *testing.T, dir string) {}, "", "", false},
		{"CLAUDE.md beats AGENTS.md", func(t *testing.T, dir string) {
			commitFile(t, dir, "AGENTS.md", "agents\n")
			commitFile(t, dir, "CLAUDE.md", "claude\n")
		}, "CLAUDE.md", "claude\n", false},
		{"AGENTS.md alone", func(t *testing.T, dir string) {
			commitFile(t, dir, "AGENTS.md", "agents\n")
		}, "AGENTS.md", "agents\n", false},
		{"executable file qualifies", func(t *testing.T, dir string) {
			commitFile(t, dir, "CLAUDE.md", "exec\n")
			gitT(t, dir, "update-index", "--chmod=+x", "CLAUDE.md")
			gitT(t, dir, "commit", "-q", "-m", "x")
		}, "CLAUDE.md", "exec\n", false},
		{"uncommitted file is ignored", func(t *testing.T, dir string) {
			commitFile(t, dir, "AGENTS.md", "agents\n")
			writeFile(t, filepath.Join(dir, "CLAUDE.md"), "on disk only\n")
		}, "AGENTS.md", "agents\n", false},
		{"uncommitted edit is ignored", func(t *testing.T, dir string) {
			commitFile(t, dir, "CLAUDE.md", "committed\n")
			writeFile(t, filepath.Join(dir, "CLAUDE.md"), "edited\n")
		}, "CLAUDE.md", "committed\n", false},
		{"symlink is ignored", func(t *testing.T, dir string) {
			commitFile(t, dir, "AGENTS.md", "agents\n")
			commitFile(t, dir, "real.md", "real\n")
			if err := os.Symlink("real.md", filepath.Join(dir, "CLAUDE.md")); err != nil {
				t.Fatal(err)
			}
			gitT(t, dir, "add", "CLAUDE.md")
			gitT(t, dir, "commit", "-q", "-m", "link")
		}, "AGENTS.md", "agents\n", false},
		{"directory is ignored", func(t *testing.T, dir string) {
			commitFile(t, dir, "CLAUDE.md/inner.md", "inner\n")
			commitFile(t, dir, "AGENTS.md", "agents\n")
		}, "AGENTS.md", "agents\n", false},
		{"only the root counts", func(t *testing.T, dir string) {
			commitFile(t, dir, "sub/CLAUDE.md", "nested\n")
		}, "", "", false},
		{"oversized file is ignored", func(t *testing.T, dir string) {
			commitFile(t, dir, "CLAUDE.md", strings.Repeat("x", MaxConventionBytes+1))
			commitFile(t, dir, "AGENTS.md", "agents\n")
		}, "AGENTS.md", "agents\n", false},
		{"exactly 5 MiB qualifies", func(t *testing.T, dir string) {
			commitFile(t, dir, "CLAUDE.md", strings.Repeat("x", MaxConventionBytes))
		}, "CLAUDE.md", strings.Repeat("x", MaxConventionChars) + "\n[truncated at 32000 chars]", true},
		{"40000 characters are cut to 32000 plus a marker", func(t *testing.T, dir string) {
			commitFile(t, dir, "CLAUDE.md", big)
		}, "CLAUDE.md", strings.Repeat("é", 32000) + "\n[truncated at 32000 chars]", true},
		{"32000 characters stay whole", func(t *testing.T, dir string) {
			commitFile(t, dir, "CLAUDE.md", strings.Repeat("é", 32000))
		}, "CLAUDE.md", strings.Repeat("é", 32000), false},
		{"invalid UTF-8 is replaced", func(t *testing.T, dir string) {
			commitFile(t, dir, "CLAUDE.md", "a\xffb\xfe\n")
		}, "CLAUDE.md", "a\uFFFDb\uFFFD\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t)
			tt.setup(t, dir)
			repo, err := ResolveRepo(t.Context(), dir)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadConventions(t.Context(), repo, "HEAD")
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tt.wantName || got.Text != tt.wantText || got.Truncated != tt.wantTruncated {
				t.Errorf("got %q (%d chars, truncated %v), want %q (%d chars, truncated %v)",
					got.Name, len([]rune(got.Text)), got.Truncated, tt.wantName, len([]rune(tt.wantText)), tt.wantTruncated)
			}
		})
	}
}

func TestReadConventionsReadsTheGivenCommit(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	old := commitFile(t, dir, "CLAUDE.md", "old\n")
	commitFile(t, dir, "CLAUDE.md", "new\n")
	repo, err := ResolveRepo(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadConventions(t.Context(), repo, old)
	if err != nil || got.Text != "old\n" {
		t.Fatalf("got %+v, %v; want the old text", got, err)
	}
	if _, err := ReadConventions(t.Context(), repo, "no-such-commit"); !errors.Is(err, ErrBadRef) {
		t.Errorf("bad commit: err = %v, want ErrBadRef", err)
	}
}
