package gitops

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// TreeBlob is one entry of a commit's tree with its content.
type TreeBlob struct {
	// Path is slash-separated, relative to the tree's root.
	Path string
	// Mode is the entry's git mode (0o100644, 0o100755, 0o120000, or
	// 0o160000 for a gitlink, which has no content).
	Mode uint32
	// Blob is a file's bytes or a symlink's target; nil for a gitlink.
	Blob []byte
}

// TreeBlobs reads commit's whole tree from the repository at repoRoot:
// every entry's path and mode (git ls-tree -r -z) and every blob's
// content (one git cat-file --batch). It reads the repository's objects
// only, never a work tree.
func (g *Git) TreeBlobs(ctx context.Context, repoRoot, commit string) ([]TreeBlob, error) {
	listing, err := g.Run(ctx, Call{Dir: repoRoot, Args: []string{"ls-tree", "-r", "-z", "--full-tree", commit}})
	if err != nil {
		return nil, fmt.Errorf("list base tree %s: %w", commit, err)
	}
	var files []TreeBlob
	var ids []string
	for rec := range bytes.SplitSeq(listing, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		fields := strings.Fields(string(meta))
		if !ok || len(fields) != 3 {
			return nil, fmt.Errorf("list base tree %s: malformed entry %q", commit, rec)
		}
		mode, err := strconv.ParseUint(fields[0], 8, 32)
		if err != nil {
			return nil, fmt.Errorf("list base tree %s: mode of %q: %w", commit, path, err)
		}
		files = append(files, TreeBlob{Path: string(path), Mode: uint32(mode)})
		if fields[1] == "blob" {
			ids = append(ids, fields[2])
		} else {
			ids = append(ids, "") // a gitlink: no blob
		}
	}
	var want bytes.Buffer
	for _, id := range ids {
		if id != "" {
			want.WriteString(id + "\n")
		}
	}
	pr, pw := io.Pipe()
	readErr := make(chan error, 1)
	go func() {
		err := readBatchBlobs(bufio.NewReader(pr), files, ids)
		_ = pr.CloseWithError(err) // unblocks cat-file if we stopped early
		readErr <- err
	}()
	err = g.Stream(ctx, Call{Dir: repoRoot, Args: []string{"cat-file", "--batch"}}, &want, pw)
	_ = pw.CloseWithError(err) // nil: end of file for the reader
	if rerr := <-readErr; rerr != nil {
		return nil, fmt.Errorf("read base blobs of %s: %w", commit, rerr)
	}
	if err != nil {
		return nil, fmt.Errorf("read base blobs of %s: %w", commit, err)
	}
	return files, nil
}

// readBatchBlobs fills files' blobs from cat-file --batch output, in the
// order ids asked for them ("" ids are skipped).
func readBatchBlobs(r *bufio.Reader, files []TreeBlob, ids []string) error {
	for i, id := range ids {
		if id == "" {
			continue
		}
		header, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("blob %s: %w", id, err)
		}
		fields := strings.Fields(header)
		if len(fields) != 3 || fields[0] != id || fields[1] != "blob" {
			return fmt.Errorf("blob %s: unexpected header %q", id, header)
		}
		size, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("blob %s: bad size %q", id, fields[2])
		}
		blob := make([]byte, size+1) // the content and its newline
		if _, err := io.ReadFull(r, blob); err != nil {
			return fmt.Errorf("blob %s: %w", id, err)
		}
		files[i].Blob = blob[:size]
	}
	return nil
}
