package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// BasePack is a commit's objects packed and indexed in a directory, ready
// for a repository to borrow through objects/info/alternates.
type BasePack struct {
	// Name is the pack's base name, pack-<checksum>: Name+".pack" and
	// Name+".idx" are in the directory.
	Name string
	// Shallow is the path of the shallow file a history-free pack needs
	// (see ShallowFile), "" with history.
	Shallow string
	// Bytes is the pack's size.
	Bytes int64
}

// packHash is what git index-pack prints for a pack: its checksum, 40 or
// 64 hex digits.
var packHash = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// WriteBasePack packs commit (only it, or with its history) from the
// repository at repoRoot into dir, which must exist, and indexes it there,
// with a shallow file beside it when the history is left out. The files
// are readable by all: a sandbox's unprivileged user reads them through a
// read-only mount. Both steps
// read operator content only: the index is built by git on a pack this
// process just wrote.
func (g *Git) WriteBasePack(ctx context.Context, repoRoot, commit string, withHistory bool, dir string) (BasePack, error) {
	var bp BasePack
	tmp := filepath.Join(dir, "base.pack")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return bp, fmt.Errorf("create base pack: %w", err)
	}
	repo := Repo{Root: repoRoot}
	var info PackInfo
	if withHistory {
		info, err = g.PackHistory(ctx, repo, commit, f)
	} else {
		info, err = g.PackCommit(ctx, repo, commit, f)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write base pack: %w", cerr)
	}
	if err != nil {
		return bp, err
	}
	bp.Bytes = info.Bytes
	out, err := g.Run(ctx, Call{Dir: repoRoot, Args: []string{"index-pack", tmp}})
	if err != nil {
		return bp, fmt.Errorf("index base pack of %s: %w", commit, err)
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 || !packHash.MatchString(fields[len(fields)-1]) {
		return bp, fmt.Errorf("index base pack of %s: unexpected output %q", commit, out)
	}
	bp.Name = "pack-" + fields[len(fields)-1]
	for _, ext := range []string{".pack", ".idx"} {
		if err := os.Rename(filepath.Join(dir, "base"+ext), filepath.Join(dir, bp.Name+ext)); err != nil {
			return bp, fmt.Errorf("name base pack: %w", err)
		}
	}
	if !withHistory {
		bp.Shallow = filepath.Join(dir, "shallow")
		if err := os.WriteFile(bp.Shallow, ShallowFile(info.Commit), 0o644); err != nil {
			return bp, fmt.Errorf("write shallow file: %w", err)
		}
	}
	return bp, nil
}
