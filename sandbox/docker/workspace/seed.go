package workspace

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
)

// A resumed run (Config.Resume) works on the prior run's tree:
// the host lane holds it, and the container's /work must start as that
// tree, not as the base commit's. The lane is the only copy of the prior
// work until the run's export, so nothing here writes to it: it is read,
// streamed into the work volume before the container first starts, and
// the worker's index is made from the base tree alone, so the prior work
// shows as uncommitted changes (RE-8, RE-10).

// errSeedTooLarge: the lane holds more than the run's limits allow.
var errSeedTooLarge = errors.New("resume seed: the worktree is larger than the run's limits")

// seedVolume uploads the host lane's tree into /work of container id.
func (w *Workspace) seedVolume(ctx context.Context, id string) error {
	root, err := os.OpenRoot(w.cfg.Worktree)
	if err != nil {
		return fmt.Errorf("resume seed: open the worktree: %w", err)
	}
	defer func() { _ = root.Close() }() // read-only
	pr, pw := io.Pipe()
	go func() { _ = pw.CloseWithError(writeSeed(pw, root, w.cfg.Limits.MaxBytes, w.cfg.Limits.MaxEntries)) }()
	err = w.eng.Upload(ctx, id, workDir, pr)
	_ = pr.CloseWithError(errors.New("upload ended")) // stops the writer if the daemon stopped reading
	if err != nil {
		return fmt.Errorf("resume seed: %w", err)
	}
	return nil
}

// writeSeed writes the tree under root as a tar stream for /work: every
// directory (0755), regular file (0755 when any exec bit is set, else
// 0644) and symlink (as it is), owned by the worker, the root's .git file
// and any nested .git left out (the export drops them too), other kinds
// of entry skipped. Nothing is followed: files are opened through root,
// which refuses a path that leaves it. More than maxBytes of file content
// or maxEntries entries (when positive) is errSeedTooLarge.
func writeSeed(out io.Writer, root *os.Root, maxBytes, maxEntries int64) error {
	tw := tar.NewWriter(out)
	var bytes, entries int64
	err := fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("resume seed: read %s: %w", name, err)
		}
		if name == "." {
			return nil
		}
		if path.Base(name) == ".git" {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		entries++
		if maxEntries > 0 && entries > maxEntries {
			return fmt.Errorf("%w (more than %d entries)", errSeedTooLarge, maxEntries)
		}
		hdr := &tar.Header{Name: name, Uid: workerUID, Gid: workerGID, ModTime: uploadModTime, Format: tar.FormatPAX}
		switch {
		case d.IsDir():
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, name+"/", 0o755
			return tw.WriteHeader(hdr)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := root.Readlink(name)
			if err != nil {
				return fmt.Errorf("resume seed: read link %s: %w", name, err)
			}
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, target, 0o777
			return tw.WriteHeader(hdr)
		case d.Type().IsRegular():
			n, err := seedFile(tw, root, name, hdr, maxBytes-bytes)
			bytes += n
			if maxBytes > 0 && bytes > maxBytes {
				return fmt.Errorf("%w (more than %d MB)", errSeedTooLarge, maxBytes>>20)
			}
			return err
		default:
			entries-- // sockets, fifos, devices: not a tree's content
			return nil
		}
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// seedFile writes the regular file name into tw; room is how many bytes
// may still come (≤ 0: no limit).
func seedFile(tw *tar.Writer, root *os.Root, name string, hdr *tar.Header, room int64) (int64, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, fmt.Errorf("resume seed: open %s: %w", name, err)
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("resume seed: inspect %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("resume seed: %s changed while it was read", name)
	}
	if room > 0 && fi.Size() > room {
		return fi.Size(), nil // over the cap: the caller refuses
	}
	hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, fi.Size(), 0o644
	if fi.Mode().Perm()&0o111 != 0 {
		hdr.Mode = 0o755
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return 0, fmt.Errorf("resume seed: %w", err)
	}
	// The size is in the header already: a file that grows while it is
	// read fails the stream instead of corrupting it.
	if _, err := io.Copy(tw, io.LimitReader(f, fi.Size())); err != nil {
		return fi.Size(), fmt.Errorf("resume seed: copy %s: %w", name, err)
	}
	return fi.Size(), nil
}
