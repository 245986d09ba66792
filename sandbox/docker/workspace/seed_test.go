package workspace

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestWriteSeedStreamsTheTreeAsTheWorkerOwnsIt(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(".git", "gitdir: /repo/.git/worktrees/dw-x\n", 0o644)
	write("a.txt", "prior work\n", 0o600)
	write("bin/run.sh", "#!/bin/sh\n", 0o700)
	write("sub/.git/config", "[core]\n", 0o644)
	write("sub/kept.txt", "k\n", 0o644)
	if err := os.Symlink("../a.txt", filepath.Join(dir, "bin", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "abs")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	var buf bytes.Buffer
	if err := writeSeed(&buf, root, 0, 0); err != nil {
		t.Fatal(err)
	}
	type entry struct {
		typ      byte
		mode     int64
		link     string
		data     string
		uid, gid int
	}
	got := map[string]entry{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		got[h.Name] = entry{h.Typeflag, h.Mode, h.Linkname, string(data), h.Uid, h.Gid}
	}
	want := map[string]entry{
		"a.txt":        {tar.TypeReg, 0o644, "", "prior work\n", workerUID, workerGID},
		"abs":          {tar.TypeSymlink, 0o777, "/etc/passwd", "", workerUID, workerGID},
		"bin/":         {tar.TypeDir, 0o755, "", "", workerUID, workerGID},
		"bin/link":     {tar.TypeSymlink, 0o777, "../a.txt", "", workerUID, workerGID},
		"bin/run.sh":   {tar.TypeReg, 0o755, "", "#!/bin/sh\n", workerUID, workerGID},
		"sub/":         {tar.TypeDir, 0o755, "", "", workerUID, workerGID},
		"sub/kept.txt": {tar.TypeReg, 0o644, "", "k\n", workerUID, workerGID},
	}
	if len(got) != len(want) {
		t.Errorf("seed holds %d entries, want %d: %v", len(got), len(want), got)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %+v, want %+v", name, got[name], w)
		}
	}

	if err := writeSeed(io.Discard, root, 0, 3); !errors.Is(err, errSeedTooLarge) {
		t.Errorf("entry cap: %v, want errSeedTooLarge", err)
	}
	if err := writeSeed(io.Discard, root, 12, 0); !errors.Is(err, errSeedTooLarge) {
		t.Errorf("byte cap: %v, want errSeedTooLarge", err)
	}
	if err := writeSeed(io.Discard, root, 1<<20, 100); err != nil {
		t.Errorf("within the caps: %v", err)
	}
}
