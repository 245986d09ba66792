package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dirtywork/dirtywork/gitops"
)

// basePack is the base commit's objects packed and indexed on the host,
// ready to upload: the worker's repository reads them through
// objects/info/alternates from the read-only tools volume, so a large pack
// never lands on the /gitdir tmpfs and the worker cannot alter it.
type basePack struct {
	// Dir is the temporary directory holding the files; Close removes it.
	Dir string
	// Name is the pack's base name, pack-<checksum>.
	Name string
	// Shallow is the path of the shallow file, "" with history.
	Shallow string
	// Bytes is the pack's size.
	Bytes int64
}

// packHash is what git index-pack prints for a pack: its checksum, 40 or
// 64 hex digits (after "pack\t" when it also kept it).
var packHash = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// makeBasePack packs commit (only it, or with its history) from the host
// repository into a new temporary directory and indexes it there. Both
// steps read operator content only; the index is built by host git on a
// pack this process just wrote, never on anything a worker touched.
func makeBasePack(ctx context.Context, g *gitops.Git, repoRoot, commit string, withHistory bool) (*basePack, error) {
	dir, err := os.MkdirTemp("", "dirtywork-pack-")
	if err != nil {
		return nil, fmt.Errorf("make a directory for the base pack: %w", err)
	}
	bp := &basePack{Dir: dir}
	if err := bp.fill(ctx, g, repoRoot, commit, withHistory); err != nil {
		bp.Close()
		return nil, err
	}
	return bp, nil
}

func (bp *basePack) fill(ctx context.Context, g *gitops.Git, repoRoot, commit string, withHistory bool) error {
	tmp := filepath.Join(bp.Dir, "base.pack")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("create base pack: %w", err)
	}
	repo := gitops.Repo{Root: repoRoot}
	var info gitops.PackInfo
	if withHistory {
		info, err = g.PackHistory(ctx, repo, commit, f)
	} else {
		info, err = g.PackCommit(ctx, repo, commit, f)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write base pack: %w", cerr)
	}
	if err != nil {
		return err
	}
	bp.Bytes = info.Bytes
	out, err := g.Run(ctx, gitops.Call{Dir: repoRoot, Args: []string{"index-pack", tmp}})
	if err != nil {
		return fmt.Errorf("index base pack of %s: %w", commit, err)
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 || !packHash.MatchString(fields[len(fields)-1]) {
		return fmt.Errorf("index base pack of %s: unexpected output %q", commit, out)
	}
	bp.Name = "pack-" + fields[len(fields)-1]
	for _, ext := range []string{".pack", ".idx"} {
		if err := os.Rename(filepath.Join(bp.Dir, "base"+ext), filepath.Join(bp.Dir, bp.Name+ext)); err != nil {
			return fmt.Errorf("name base pack: %w", err)
		}
	}
	if !withHistory {
		bp.Shallow = filepath.Join(bp.Dir, "shallow")
		if err := os.WriteFile(bp.Shallow, gitops.ShallowFile(info.Commit), 0o600); err != nil {
			return fmt.Errorf("write shallow file: %w", err)
		}
	}
	return nil
}

// Close removes the pack's files.
func (bp *basePack) Close() {
	_ = os.RemoveAll(bp.Dir) // a temporary directory; nothing to keep
}
