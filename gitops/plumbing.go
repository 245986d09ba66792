package gitops

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ComposeTree writes the tree that is base with the given paths taken
// from from: a path in from is added or replaced, a path absent there is
// removed. Plumbing on a temporary index in the repository at dir,
// config-neutral; paths are literal, never pathspecs.
func (g *Git) ComposeTree(ctx context.Context, dir, base, from string, paths []string) (string, error) {
	tmp, err := os.MkdirTemp("", "dirtywork-compose-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	index := filepath.Join(tmp, "index")
	c := func(args ...string) Call { return Call{Dir: dir, Neutral: true, IndexFile: index, Args: args} }
	if _, err := g.Run(ctx, c("read-tree", base)); err != nil {
		return "", fmt.Errorf("read %s: %w", base, err)
	}
	want := map[string]bool{}
	for _, p := range paths {
		want[p] = true
	}
	// ls-tree with pathspecs would match by prefix and magic; list the
	// whole tree and pick the exact names instead.
	out, err := g.Run(ctx, Call{Dir: dir, Args: []string{"ls-tree", "-r", "-z", "--full-tree", from}})
	if err != nil {
		return "", fmt.Errorf("list %s: %w", from, err)
	}
	var info bytes.Buffer
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok || !want[string(path)] {
			continue
		}
		f := strings.Fields(string(meta)) // mode type sha
		if len(f) != 3 || f[1] != "blob" {
			continue
		}
		info.WriteString(f[0] + " " + f[2] + "\t" + string(path) + "\x00")
		delete(want, string(path))
	}
	for p := range want {
		info.WriteString("0 " + zeroSHA + "\t" + p + "\x00")
	}
	if err := g.Stream(ctx, c("update-index", "--add", "--replace", "--force-remove", "-z", "--index-info"), &info, nil); err != nil {
		return "", fmt.Errorf("stage %d paths: %w", len(paths), err)
	}
	tree, err := g.Run(ctx, c("write-tree"))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(tree)), nil
}

// CommitTree makes a commit of tree with parents, message and the given
// identity (author and committer), config-neutral. Nothing points at it
// until a ref is moved.
func (g *Git) CommitTree(ctx context.Context, dir, tree, message, name, email string, parents ...string) (string, error) {
	args := []string{"-c", "user.name=" + name, "-c", "user.email=" + email, "commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	var out bytes.Buffer
	err := g.Stream(ctx, Call{Dir: dir, Neutral: true, Args: append(args, "-F", "-")}, strings.NewReader(message), &out)
	if err != nil {
		return "", fmt.Errorf("commit tree %s: %w", tree, err)
	}
	return strings.TrimSpace(out.String()), nil
}

// TreeOf resolves a commit (or tree-ish) to its tree.
func (g *Git) TreeOf(ctx context.Context, dir, rev string) (string, error) {
	out, err := g.Run(ctx, Call{Dir: dir, Args: []string{"rev-parse", "--verify", "--end-of-options", rev + "^{tree}"}})
	if err != nil {
		return "", fmt.Errorf("resolve the tree of %s: %w", rev, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// AdminDir finds the git dir of a linked worktree under commonDir
// (<common>/worktrees/<name> whose gitdir file names worktree/.git), ""
// when none does.
func AdminDir(commonDir, worktree string) string {
	entries, err := os.ReadDir(filepath.Join(commonDir, "worktrees"))
	if err != nil {
		return ""
	}
	want := filepath.Join(worktree, ".git")
	for _, e := range entries {
		dir := filepath.Join(commonDir, "worktrees", e.Name())
		data, err := os.ReadFile(filepath.Join(dir, "gitdir"))
		if err == nil && filepath.Clean(strings.TrimSpace(string(data))) == want {
			return dir
		}
	}
	return ""
}

// ResetIndex makes the index of a linked worktree (admin dir gitDir)
// match commit without touching its files, so status shows what differs
// from the new HEAD.
func (g *Git) ResetIndex(ctx context.Context, gitDir, worktree, commit string) error {
	_, err := g.Run(ctx, Call{Dir: worktree, Neutral: true, GitDir: gitDir, WorkTree: worktree, Args: []string{"read-tree", commit}})
	if err != nil {
		return fmt.Errorf("refresh the index of %s: %w", worktree, err)
	}
	return nil
}
