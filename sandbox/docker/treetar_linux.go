package docker

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// inode identifies a file, to write its second and later names as hard
// links.
type inode struct {
	dev, ino uint64
}

// writeTree writes the directory tree at dir to w as one tar stream, as
// `tar -C dir -c .` would, for an image import: entries are named ./path,
// ownership is the files' numeric uid and gid (user names are not looked up:
// they would be this machine's, not the image's), a file's second name is a
// hard link, symbolic links are stored, never followed. Sockets cannot be
// archived and are left out; extended attributes are not carried.
func writeTree(w io.Writer, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("archive %s: %w", dir, err)
	}
	defer func() { _ = root.Close() }() // read-only
	tw := tar.NewWriter(w)
	seen := map[inode]string{}
	walkErr := fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return writeEntry(tw, root, name, info, seen)
	})
	if walkErr != nil {
		return fmt.Errorf("archive %s: %w", dir, walkErr)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archive %s: %w", dir, err)
	}
	return nil
}

// writeEntry writes the header of name (and a regular file's content).
func writeEntry(tw *tar.Writer, root *os.Root, name string, info fs.FileInfo, seen map[inode]string) error {
	mode := info.Mode()
	if mode&fs.ModeSocket != 0 {
		return nil
	}
	var target string
	if mode&fs.ModeSymlink != 0 {
		var err error
		if target, err = root.Readlink(name); err != nil {
			return err
		}
	}
	hdr, err := tar.FileInfoHeader(info, target)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	hdr.Name = "./" + name
	switch {
	case name == ".":
		hdr.Name = "./"
	case mode.IsDir():
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname = "", ""
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no file status", name)
	}
	hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
	if mode.IsRegular() && st.Nlink > 1 {
		key := inode{dev: st.Dev, ino: st.Ino}
		if first, ok := seen[key]; ok {
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
		} else {
			seen[key] = hdr.Name
		}
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil
	}
	return copyFile(tw, root, name, hdr.Size)
}

// copyFile copies exactly size bytes of name into tw: a file that changed
// size since it was listed is an error, not a corrupt archive.
func copyFile(tw *tar.Writer, root *os.Root, name string, size int64) error {
	f, err := root.Open(name)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read-only
	n, err := io.Copy(tw, io.LimitReader(f, size))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("%s: file shrank while being archived (read %d of %d bytes)", name, n, size)
	}
	return nil
}
