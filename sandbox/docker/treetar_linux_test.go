package docker

import (
	"archive/tar"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// entry is what a test checks of one tar entry.
type entry struct {
	typ      byte
	mode     int64
	linkname string
	content  string
	uid, gid int
	uname    string
}

// readEntries reads a tar stream into its entries by name, and their
// order.
func readEntries(r io.Reader) (map[string]entry, []string, error) {
	entries := map[string]entry{}
	var order []string
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries, order, nil
		}
		if err != nil {
			return nil, nil, err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, nil, err
		}
		entries[hdr.Name] = entry{
			typ: hdr.Typeflag, mode: hdr.Mode & 0o7777, linkname: hdr.Linkname,
			content: string(data), uid: hdr.Uid, gid: hdr.Gid, uname: hdr.Uname + hdr.Gname,
		}
		order = append(order, hdr.Name)
	}
}

func TestWriteTree(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "etc", "passwd"), "root:x:0:0::/root:/bin/sh\n")
	writeFile(t, filepath.Join(dir, "bin", "tool"), "#!/bin/sh\n")
	mustDo(t, os.Chmod(filepath.Join(dir, "bin", "tool"), 0o755))
	mustDo(t, os.Link(filepath.Join(dir, "bin", "tool"), filepath.Join(dir, "bin", "tool2")))
	mustDo(t, os.Symlink("tool", filepath.Join(dir, "bin", "sh")))
	// An absolute link points at this machine's file; it must be stored,
	// not followed.
	mustDo(t, os.Symlink("/etc/hostname", filepath.Join(dir, "etc", "hostname")))
	mustDo(t, os.MkdirAll(filepath.Join(dir, "run"), 0o755))
	mustDo(t, syscall.Mkfifo(filepath.Join(dir, "run", "fifo"), 0o600))
	l, err := net.Listen("unix", filepath.Join(dir, "run", "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	mustDo(t, os.Mkdir(filepath.Join(dir, "empty"), 0o700))
	uid, gid := os.Getuid(), os.Getgid()
	if os.Geteuid() == 0 {
		// Only root can give a file away; then the archive must carry the
		// file's owner, not the archiver's.
		mustDo(t, os.Lchown(filepath.Join(dir, "etc", "passwd"), 1234, 5678))
	}

	pr, pw := io.Pipe()
	go func() { _ = pw.CloseWithError(writeTree(pw, dir)) }()
	entries, order, err := readEntries(pr)
	if err != nil {
		t.Fatal(err)
	}

	want := map[string]entry{
		"./":             {typ: tar.TypeDir, mode: 0o755},
		"./bin/":         {typ: tar.TypeDir, mode: 0o755},
		"./bin/sh":       {typ: tar.TypeSymlink, mode: 0o777, linkname: "tool"},
		"./bin/tool":     {typ: tar.TypeReg, mode: 0o755, content: "#!/bin/sh\n"},
		"./bin/tool2":    {typ: tar.TypeLink, mode: 0o755, linkname: "./bin/tool"},
		"./empty/":       {typ: tar.TypeDir, mode: 0o700},
		"./etc/":         {typ: tar.TypeDir, mode: 0o755},
		"./etc/hostname": {typ: tar.TypeSymlink, mode: 0o777, linkname: "/etc/hostname"},
		"./etc/passwd":   {typ: tar.TypeReg, mode: 0o644, content: "root:x:0:0::/root:/bin/sh\n"},
		"./run/":         {typ: tar.TypeDir, mode: 0o755},
		"./run/fifo":     {typ: tar.TypeFifo, mode: 0o600},
	}
	if order[0] != "./" {
		t.Errorf("first entry %q, want the root ./", order[0])
	}
	if len(entries) != len(want) {
		t.Errorf("archive holds %q, want %d entries (no socket)", order, len(want))
	}
	for name, w := range want {
		w.uid, w.gid = uid, gid
		if name == "./etc/passwd" && os.Geteuid() == 0 {
			w.uid, w.gid = 1234, 5678
		}
		if name == "./" {
			// t.TempDir's own mode is not ours to choose.
			w.mode = entries[name].mode
		}
		if got, ok := entries[name]; !ok {
			t.Errorf("%s missing from the archive", name)
		} else if got != w {
			t.Errorf("%s = %+v, want %+v", name, got, w)
		}
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
