package workspace

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// uploadEntry is one member of an archive uploaded into a container: a
// file copied from Source on the host, a file holding Data, or else a
// directory.
type uploadEntry struct {
	// Name is relative to the upload's destination; "/" is the
	// destination itself: the daemon applies that member's ownership and
	// mode to the directory uploaded into (it skips a "./" member's), which
	// is how a volume's root, created root-owned, is handed over.
	Name     string
	Source   string
	Data     []byte // used when Source is empty; nil for a directory
	Mode     int64
	UID, GID int
}

// uploadModTime is every uploaded member's modification time, so the same
// inputs make the same archive.
var uploadModTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// writeUpload writes entries to w as a tar stream whose headers carry the
// ownership and modes the files get in the container: the daemon applies
// them as given (CopyUIDGID unset), so no prep container has to chown.
func writeUpload(w io.Writer, entries []uploadEntry) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		if err := writeUploadEntry(tw, e); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("finish upload archive: %w", err)
	}
	return nil
}

func writeUploadEntry(tw *tar.Writer, e uploadEntry) error {
	hdr := &tar.Header{
		Name:    e.Name,
		Mode:    e.Mode,
		Uid:     e.UID,
		Gid:     e.GID,
		ModTime: uploadModTime,
		Format:  tar.FormatPAX,
	}
	if e.Source == "" && e.Data != nil {
		hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(e.Data))
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("write upload archive entry %s: %w", e.Name, err)
		}
		if _, err := tw.Write(e.Data); err != nil {
			return fmt.Errorf("write %s into upload archive: %w", e.Name, err)
		}
		return nil
	}
	if e.Source == "" {
		hdr.Typeflag = tar.TypeDir
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("write upload archive entry %s: %w", e.Name, err)
		}
		return nil
	}
	f, err := os.Open(e.Source)
	if err != nil {
		return fmt.Errorf("open %s for upload: %w", e.Source, err)
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("inspect %s for upload: %w", e.Source, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("upload %s: not a regular file", e.Source)
	}
	hdr.Typeflag = tar.TypeReg
	hdr.Size = fi.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("write upload archive entry %s: %w", e.Name, err)
	}
	// The size is in the header already: a file that changes length
	// while it is copied fails the archive rather than corrupting it.
	if _, err := io.Copy(tw, io.LimitReader(f, fi.Size())); err != nil {
		return fmt.Errorf("copy %s into upload archive: %w", e.Source, err)
	}
	return nil
}

// toolsEntries is the content of the run's tools volume: the base pack,
// all root's and read-only, so a worker that runs as another user without
// capabilities can change none of it. The tool server is in the toolbox
// volume (toolvol.go).
func toolsEntries(pack *basePack) []uploadEntry {
	dir := func(name string) uploadEntry { return uploadEntry{Name: name, Mode: 0o755} }
	file := func(name, src string, mode int64) uploadEntry {
		return uploadEntry{Name: name, Source: src, Mode: mode}
	}
	entries := []uploadEntry{
		dir("/"),
		dir("objects/"),
		dir("objects/pack/"),
		file("objects/pack/"+pack.Name+".pack", filepath.Join(pack.Dir, pack.Name+".pack"), 0o444),
		file("objects/pack/"+pack.Name+".idx", filepath.Join(pack.Dir, pack.Name+".idx"), 0o444),
	}
	if pack.Shallow != "" {
		entries = append(entries, file("shallow", pack.Shallow, 0o444))
	}
	return entries
}

// workRootEntries hands the work volume's root, which the daemon creates
// root-owned, to the worker.
func workRootEntries() []uploadEntry {
	return []uploadEntry{{Name: "/", Mode: 0o755, UID: workerUID, GID: workerGID}}
}
