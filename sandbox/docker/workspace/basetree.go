package workspace

import (
	"context"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox/export"
)

// baseTree reads the base commit's tree from the host repository (paths,
// modes and blob contents), for the export's diff. It reads the
// operator's objects only, never the worker's files.
func baseTree(ctx context.Context, g *gitops.Git, repoRoot, commit string) ([]export.BaseFile, error) {
	blobs, err := g.TreeBlobs(ctx, repoRoot, commit)
	if err != nil {
		return nil, err
	}
	files := make([]export.BaseFile, len(blobs))
	for i, b := range blobs {
		files[i] = export.BaseFile{Path: b.Path, Mode: export.BlobMode(b.Mode), Blob: b.Blob}
	}
	return files, nil
}
