package gitops

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// PackInfo describes a pack written by PackCommit or PackHistory.
type PackInfo struct {
	// Commit is the full id of the packed commit.
	Commit string
	// Tree is the full id of that commit's root tree.
	Tree string
	// Objects is the object count from the pack header.
	Objects int
	// Bytes is how many bytes were written, header and trailer included.
	Bytes int64
}

// ShallowFile is the content of the shallow file ($GIT_DIR/shallow) of a
// repository holding only commit, as PackCommit writes it: without it git
// treats the missing parents as corruption (fsck, log, rev-list fail);
// with it commit is a history boundary, like a --depth=1 clone.
//
// The receiving side needs no Go, only git. With the pack on stdin, the
// commit in $BASE, the branch in $BRANCH and the work tree at /work:
//
//	export GIT_DIR=/gitdir GIT_WORK_TREE=/work
//	git init -q --template=
//	git index-pack --stdin                    # the pack; stored under $GIT_DIR/objects/pack
//	printf '%s\n' "$BASE" >"$GIT_DIR/shallow" # ShallowFile($BASE); skip it after PackHistory
//	git update-ref "refs/heads/$BRANCH" "$BASE"
//	git symbolic-ref HEAD "refs/heads/$BRANCH"
//	git read-tree -u --reset HEAD             # index and work tree from the base tree
//
// Afterwards the commit and tree ids are the host's, git diff $BASE
// works, git log shows one commit and git fsck --connectivity-only passes.
func ShallowFile(commit string) []byte {
	return []byte(commit + "\n")
}

// PackCommit writes to w a pack holding exactly commit (any ref naming a
// commit; an annotated tag is peeled), its root tree and every tree and
// blob reachable from that tree, but none of its parents, tags or other
// refs: a worker that indexes it sees one commit under the host's ids and
// no history. Submodule commits (gitlinks) are not included; their
// entries stay in the tree. The pack is self-contained (not thin), so
// git index-pack needs no --fix-thin. See ShallowFile for the receiving
// side.
//
// It runs git rev-list --objects --no-walk <commit> piped through an OS
// pipe into git pack-objects --stdout, and pack-objects' output is copied
// to w as it is produced; nothing is buffered here. The seemingly simpler
// pack-objects --revs with "<commit> --not <parents>" would be wrong: it
// leaves out every object a parent reaches, so the files a commit did not
// change would be missing. Replace refs are ignored, so the ids packed
// are the stored ones.
//
// A ref that names no commit is ErrBadRef, before anything is written. On
// any error w may already hold part of a pack and must be discarded; a
// failed write to w is returned wrapped. A cancelled ctx kills both
// processes and the error wraps ctx.Err().
func (g *Git) PackCommit(ctx context.Context, repo Repo, commit string, w io.Writer) (PackInfo, error) {
	return g.pack(ctx, repo, commit, w, true)
}

// PackHistory is PackCommit with the commit's full history: every commit,
// tree and blob reachable from commit, and nothing that only other
// branches or tags reach (annotated tag objects included). The receiver
// writes no shallow file.
func (g *Git) PackHistory(ctx context.Context, repo Repo, commit string, w io.Writer) (PackInfo, error) {
	return g.pack(ctx, repo, commit, w, false)
}

// pack resolves commit and streams the objects rev-list lists for it into
// w; single limits the walk to the commit itself.
func (g *Git) pack(ctx context.Context, repo Repo, commit string, w io.Writer, single bool) (PackInfo, error) {
	sha, err := g.resolveCommit(ctx, repo.Root, commit)
	if err != nil {
		return PackInfo{}, fmt.Errorf("pack %s: %w", commit, err)
	}
	tree, err := g.run(ctx, repo.Root, "rev-parse", "--verify", sha+"^{tree}")
	if err != nil {
		return PackInfo{}, fmt.Errorf("pack %s: resolve its tree: %w", sha, err)
	}
	list := []string{"rev-list", "--objects"}
	if single {
		list = append(list, "--no-walk")
	}
	list = append(list, sha)
	// Without --thin no delta refers to an object outside the pack;
	// offset deltas are smaller and every git since 1.4.4 reads them.
	packArgs := []string{"pack-objects", "--stdout", "-q", "--delta-base-offset"}

	pw := &packWriter{w: w}
	err = g.pipe(ctx, Call{Dir: repo.Root, Args: list}, Call{Dir: repo.Root, Args: packArgs}, pw, noReplaceObjects)
	if err != nil {
		if ctx.Err() == nil {
			// A failed write makes pack-objects die of a broken pipe;
			// the write error is the cause worth reporting.
			if werr := pw.writeErr(); werr != nil {
				return PackInfo{}, fmt.Errorf("pack %s: write the pack: %w", sha, werr)
			}
		}
		return PackInfo{}, fmt.Errorf("pack %s: %w", sha, err)
	}
	objects, n, err := pw.result()
	if err != nil {
		return PackInfo{}, fmt.Errorf("pack %s: %w", sha, err)
	}
	return PackInfo{Commit: sha, Tree: strings.TrimSpace(string(tree)), Objects: objects, Bytes: n}, nil
}

// noReplaceObjects makes git read objects as stored, so refs/replace can
// neither swap the packed tree nor change which objects are listed.
const noReplaceObjects = "GIT_NO_REPLACE_OBJECTS=1"

// Stream runs one git command like Run, in the same environment, but
// reads its stdin from stdin (none when nil) and copies its stdout to
// stdout as git produces it instead of buffering it. A failure is an
// *Error unless ctx ended, in which case the error wraps ctx.Err().
func (g *Git) Stream(ctx context.Context, c Call, stdin io.Reader, stdout io.Writer) error {
	p, err := g.prepare(ctx, c)
	if err != nil {
		return err
	}
	p.cmd.Stdin = stdin
	p.cmd.Stdout = stdout
	if err := p.cmd.Run(); err != nil {
		return p.failure(ctx, err)
	}
	return nil
}

// pipe runs from | to with to's stdout copied to w. The two gits are
// joined by an OS pipe, so the data between them never passes through
// this process. When either fails the other is killed, its output being
// worthless; the first failure is returned. extraEnv is added to both.
func (g *Git) pipe(ctx context.Context, from, to Call, w io.Writer, extraEnv ...string) error {
	// Killing the survivor must not look like the caller cancelling, so
	// the processes get a child context and failures are judged by ctx.
	procCtx, kill := context.WithCancel(ctx)
	defer kill()
	src, err := g.prepare(procCtx, from)
	if err != nil {
		return err
	}
	dst, err := g.prepare(procCtx, to)
	if err != nil {
		return err
	}
	src.cmd.Env = append(src.cmd.Env, extraEnv...)
	dst.cmd.Env = append(dst.cmd.Env, extraEnv...)

	r, wr, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("pipe git %s into git %s: %w", src.sub, dst.sub, err)
	}
	src.cmd.Stdout = wr
	dst.cmd.Stdin = r
	dst.cmd.Stdout = w
	if err := src.cmd.Start(); err != nil {
		closeAll(r, wr)
		return src.failure(ctx, err)
	}
	if err := dst.cmd.Start(); err != nil {
		closeAll(r, wr)
		kill()
		_ = src.cmd.Wait() // reap it; its error is only the kill
		return dst.failure(ctx, err)
	}
	// The children hold their own ends now. Dropping ours lets dst see
	// EOF when src exits, and src get EPIPE if dst exits early, instead
	// of either blocking on a pipe this process keeps open.
	closeAll(r, wr)

	type exit struct {
		p   *process
		err error
	}
	exits := make(chan exit, 2)
	for _, p := range []*process{src, dst} {
		go func() { exits <- exit{p, p.cmd.Wait()} }()
	}
	var first error
	for range 2 {
		e := <-exits
		if e.err != nil && first == nil {
			first = e.p.failure(ctx, e.err)
			kill()
		}
	}
	return first
}

// closeAll closes the parent's ends of a pipe; nothing useful can be done
// about an error closing a pipe.
func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// packHeaderLen is the size of a pack header: "PACK", a version and an
// object count, each four bytes.
const packHeaderLen = 12

// packWriter passes a pack through to w, counting bytes, keeping the
// header for the object count and remembering the first write error. A
// mutex guards it because os/exec writes from its own goroutine, which a
// cancelled command may leave behind.
type packWriter struct {
	w      io.Writer
	mu     sync.Mutex
	n      int64
	header [packHeaderLen]byte
	err    error
}

// Write copies p to the underlying writer.
func (pw *packWriter) Write(p []byte) (int, error) {
	n, err := pw.w.Write(p)
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.n < packHeaderLen {
		copy(pw.header[pw.n:], p[:n])
	}
	pw.n += int64(n)
	if err != nil && pw.err == nil {
		pw.err = err
	}
	return n, err
}

// writeErr is the first error the underlying writer returned.
func (pw *packWriter) writeErr() error {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.err
}

// result checks the header of what was written and returns its object
// count and the byte count.
func (pw *packWriter) result() (int, int64, error) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.n < packHeaderLen || !bytes.Equal(pw.header[:4], []byte("PACK")) {
		return 0, pw.n, fmt.Errorf("git pack-objects wrote no pack header (%d bytes)", pw.n)
	}
	if v := binary.BigEndian.Uint32(pw.header[4:8]); v != 2 && v != 3 {
		return 0, pw.n, fmt.Errorf("git pack-objects wrote pack version %d, want 2 or 3", v)
	}
	return int(binary.BigEndian.Uint32(pw.header[8:12])), pw.n, nil
}
