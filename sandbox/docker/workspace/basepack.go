package workspace

import (
	"context"
	"fmt"
	"os"

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
	p, err := g.WriteBasePack(ctx, repoRoot, commit, withHistory, bp.Dir)
	if err != nil {
		return err
	}
	bp.Name, bp.Shallow, bp.Bytes = p.Name, p.Shallow, p.Bytes
	return nil
}

// Close removes the pack's files.
func (bp *basePack) Close() {
	_ = os.RemoveAll(bp.Dir) // a temporary directory; nothing to keep
}
