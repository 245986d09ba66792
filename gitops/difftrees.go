package gitops

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// FileChange is one path that differs between two trees.
type FileChange struct {
	Path string
	// Status is git's letter: A added, D deleted, M modified, T type
	// changed.
	Status string
	// OldMode and NewMode are the octal modes ("000000" when absent).
	OldMode, NewMode string
	// OldBlob and NewBlob are the object names (zeros when absent).
	OldBlob, NewBlob string
	// Added and Deleted count lines; Binary is set when git counted none.
	Added, Deleted int
	Binary         bool
}

// DiffTrees lists the paths that differ between trees (or commits) a and
// b in the repository at dir, with line counts: config-neutral, no rename
// detection, no textconv.
func (g *Git) DiffTrees(ctx context.Context, dir, a, b string) ([]FileChange, error) {
	return (&TreeDiff{g: g, base: Call{Dir: dir, Neutral: true}}).Files(ctx, a, b)
}

// TreeDiff compares trees of one repository, config-neutral, with the
// filter drivers to blank looked up once for all its comparisons (a
// review lists the files and writes the patch: one git process fewer).
type TreeDiff struct {
	g    *Git
	base Call
}

// TreeDiff prepares comparisons in the repository at dir.
func (g *Git) TreeDiff(ctx context.Context, dir string) (*TreeDiff, error) {
	base := Call{Dir: dir, Neutral: true}
	f, err := g.NeutralFilters(ctx, base)
	if err != nil {
		return nil, err
	}
	base.Filters = f
	return &TreeDiff{g: g, base: base}, nil
}

// Files is DiffTrees in d's repository.
func (d *TreeDiff) Files(ctx context.Context, a, b string) ([]FileChange, error) {
	c := d.base
	c.Args = []string{"diff-tree", "-r", "-z", "--no-renames", "--raw", "--numstat", a, b}
	out, err := d.g.Run(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("compare %s with %s: %w", a, b, err)
	}
	return parseRawNumstat(out)
}

// parseRawNumstat parses `diff-tree -z --raw --numstat`: first every raw
// record (":old new oldsha newsha X\0path\0"), then every numstat record
// ("added\tdeleted\tpath\0").
func parseRawNumstat(out []byte) ([]FileChange, error) {
	fields := bytes.Split(out, []byte{0})
	var changes []FileChange
	byPath := map[string]int{}
	for i := 0; i < len(fields); i++ {
		f := string(fields[i])
		if f == "" {
			continue
		}
		if strings.HasPrefix(f, ":") {
			parts := strings.Fields(f[1:])
			if len(parts) < 5 || i+1 >= len(fields) {
				return nil, fmt.Errorf("unexpected diff-tree record %q", f)
			}
			i++
			c := FileChange{
				Path: string(fields[i]), OldMode: parts[0], NewMode: parts[1],
				OldBlob: parts[2], NewBlob: parts[3], Status: parts[4][:1],
			}
			byPath[c.Path] = len(changes)
			changes = append(changes, c)
			continue
		}
		added, rest, ok := strings.Cut(f, "\t")
		deleted, path, ok2 := strings.Cut(rest, "\t")
		if !ok || !ok2 {
			return nil, fmt.Errorf("unexpected diff-tree record %q", f)
		}
		idx, known := byPath[path]
		if !known {
			continue
		}
		if added == "-" {
			changes[idx].Binary = true
			continue
		}
		changes[idx].Added, _ = strconv.Atoi(added)
		changes[idx].Deleted, _ = strconv.Atoi(deleted)
	}
	return changes, nil
}

// WritePatch streams the patch from a to b (trees or commits) in the
// repository at dir to w: config-neutral, no external diff or textconv,
// binary files as "Binary files differ". Only paths, when given, are
// compared.
func (g *Git) WritePatch(ctx context.Context, dir, a, b string, w io.Writer, paths ...string) error {
	return (&TreeDiff{g: g, base: Call{Dir: dir, Neutral: true}}).Patch(ctx, a, b, w, paths...)
}

// Patch is WritePatch in d's repository.
func (d *TreeDiff) Patch(ctx context.Context, a, b string, w io.Writer, paths ...string) error {
	args := []string{"diff-tree", "-p", "-r", "--no-renames", "--no-ext-diff", "--no-textconv", a, b}
	if len(paths) > 0 {
		// Worker-chosen names are paths, never pathspec magic.
		args = append(append([]string{"--literal-pathspecs"}, args...), "--")
		args = append(args, paths...)
	}
	c := d.base
	c.Args = args
	if err := d.g.Stream(ctx, c, nil, w); err != nil {
		return fmt.Errorf("diff %s against %s: %w", b, a, err)
	}
	return nil
}

// CatBlob returns the content of a blob.
func (g *Git) CatBlob(ctx context.Context, dir, blob string) ([]byte, error) {
	out, err := g.Run(ctx, Call{Dir: dir, Args: []string{"cat-file", "blob", blob}})
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", blob, err)
	}
	return out, nil
}
