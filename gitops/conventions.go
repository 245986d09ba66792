package gitops

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Limits of ReadConventions.
const (
	// MaxConventionBytes: larger convention files are skipped (5 MiB).
	MaxConventionBytes = 5 << 20
	// MaxConventionChars: longer texts are cut to this many characters
	// (Unicode code points) and marked.
	MaxConventionChars = 32000
)

// conventionFiles are the root files read as repository conventions, in
// order of preference.
var conventionFiles = []string{"CLAUDE.md", "AGENTS.md"}

// truncationMarker ends a convention text cut at MaxConventionChars.
var truncationMarker = fmt.Sprintf("\n[truncated at %d chars]", MaxConventionChars)

// Conventions are the repository's own instructions for agents, read from
// a commit.
type Conventions struct {
	// Name is the file read ("CLAUDE.md" or "AGENTS.md"), "" if none
	// qualified.
	Name string
	// Text is its content, decoded as UTF-8 with invalid bytes replaced,
	// cut to MaxConventionChars plus a marker if longer.
	Text string
	// Truncated reports whether Text was cut.
	Truncated bool
}

// ReadConventions reads the conventions of commit in repo with the default
// Git. See Git.ReadConventions.
func ReadConventions(ctx context.Context, repo Repo, commit string) (Conventions, error) {
	return New().ReadConventions(ctx, repo, commit)
}

// ReadConventions reads root CLAUDE.md, else AGENTS.md, from commit's
// object store, never from disk, so uncommitted edits and the worktree's
// state play no part. Only regular blobs (mode 100644 or 100755) qualify;
// symlinks, directories and submodules do not, nor files over
// MaxConventionBytes. The first qualifying file wins; when none does the
// result is empty, not an error.
func (g *Git) ReadConventions(ctx context.Context, repo Repo, commit string) (Conventions, error) {
	sha, err := g.resolveCommit(ctx, repo.Root, commit)
	if err != nil {
		return Conventions{}, fmt.Errorf("read conventions of %s: %w", commit, err)
	}
	args := append([]string{"ls-tree", "-z", "-l", "--full-tree", sha, "--"}, conventionFiles...)
	out, err := g.run(ctx, repo.Root, args...)
	if err != nil {
		return Conventions{}, fmt.Errorf("list convention files of %s: %w", sha, err)
	}
	entries := parseLsTreeZ(out)
	for _, name := range conventionFiles {
		e, ok := entries[name]
		if !ok || e.typ != "blob" || (e.mode != "100644" && e.mode != "100755") || e.size < 0 || e.size > MaxConventionBytes {
			continue
		}
		blob, err := g.run(ctx, repo.Root, "cat-file", "blob", e.oid)
		if err != nil {
			return Conventions{}, fmt.Errorf("read %s of %s: %w", name, sha, err)
		}
		text, truncated := decodeConventions(blob)
		return Conventions{Name: name, Text: text, Truncated: truncated}, nil
	}
	return Conventions{}, nil
}

// decodeConventions decodes UTF-8, replacing each invalid byte with
// U+FFFD, and cuts the text rune-wise at MaxConventionChars.
func decodeConventions(b []byte) (string, bool) {
	runes := []rune(string(b)) // invalid bytes become U+FFFD one by one
	if len(runes) <= MaxConventionChars {
		return string(runes), false
	}
	return string(runes[:MaxConventionChars]) + truncationMarker, true
}

// treeEntry is one entry of `git ls-tree -l`.
type treeEntry struct {
	mode, typ, oid string
	size           int64 // -1 for entries without a size (trees, submodules)
}

// parseLsTreeZ parses `git ls-tree -z -l` output ("<mode> <type> <oid>
// <padded size>\t<path>\0" per entry) keyed by path.
func parseLsTreeZ(out []byte) map[string]treeEntry {
	entries := map[string]treeEntry{}
	for _, rec := range bytes.Split(out, []byte{0}) {
		meta, path, ok := strings.Cut(string(rec), "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if len(f) != 4 {
			continue
		}
		size, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			size = -1
		}
		entries[path] = treeEntry{mode: f[0], typ: f[1], oid: f[2], size: size}
	}
	return entries
}
