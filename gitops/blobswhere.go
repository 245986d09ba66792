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

// BlobsWhere reads the regular files of commit's tree whose path
// (slash-separated) want picks: one ls-tree and one cat-file --batch over
// the repository's objects, never a work tree, so nothing a worker wrote
// is read. Symlinks and submodules are passed over, and so are files
// larger than maxBytes (their bytes stream past unkept). The listing asks
// for no sizes: with loose objects that would read every object of the
// tree. It returns path -> content.
func (g *Git) BlobsWhere(ctx context.Context, repoRoot, commit string, maxBytes int64, want func(path string) bool) (map[string][]byte, error) {
	listing, err := g.Run(ctx, Call{Dir: repoRoot, Args: []string{"ls-tree", "-r", "-z", "--full-tree", commit}})
	if err != nil {
		return nil, fmt.Errorf("list tree %s: %w", commit, err)
	}
	var paths, ids []string
	for rec := range bytes.SplitSeq(listing, []byte{0}) {
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		fields := strings.Fields(string(meta))
		if !ok || len(fields) != 3 || fields[1] != "blob" || (fields[0] != "100644" && fields[0] != "100755") || !want(string(path)) {
			continue
		}
		paths = append(paths, string(path))
		ids = append(ids, fields[2])
	}
	out := map[string][]byte{}
	if len(paths) == 0 {
		return out, nil
	}
	var ask bytes.Buffer
	for _, id := range ids {
		ask.WriteString(id + "\n")
	}
	pr, pw := io.Pipe()
	readErr := make(chan error, 1)
	go func() {
		err := readBlobsUpTo(bufio.NewReader(pr), paths, ids, maxBytes, out)
		_ = pr.CloseWithError(err) // unblocks cat-file if we stopped early
		readErr <- err
	}()
	err = g.Stream(ctx, Call{Dir: repoRoot, Args: []string{"cat-file", "--batch"}}, &ask, pw)
	_ = pw.CloseWithError(err)
	if rerr := <-readErr; rerr != nil {
		return nil, fmt.Errorf("read blobs of %s: %w", commit, rerr)
	}
	if err != nil {
		return nil, fmt.Errorf("read blobs of %s: %w", commit, err)
	}
	return out, nil
}

// readBlobsUpTo reads cat-file --batch output for ids, in order, into out
// by path, keeping only blobs of at most maxBytes.
func readBlobsUpTo(r *bufio.Reader, paths, ids []string, maxBytes int64, out map[string][]byte) error {
	for i, id := range ids {
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
		if size > maxBytes {
			if _, err := io.CopyN(io.Discard, r, size+1); err != nil {
				return fmt.Errorf("blob %s: %w", id, err)
			}
			continue
		}
		blob := make([]byte, size+1) // the content and its newline
		if _, err := io.ReadFull(r, blob); err != nil {
			return fmt.Errorf("blob %s: %w", id, err)
		}
		out[paths[i]] = blob[:size]
	}
	return nil
}
