package export

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
)

func happyEntries() []entry {
	long := "long/" + strings.Repeat("n", 150) // past ustar's 100 bytes: a per-member PAX name
	return []entry{
		{name: "src/", typ: tar.TypeDir, mode: 0o777},
		{name: "src/main.go", body: "package main\n", mode: 0o600, pax: map[string]string{"comment": "per-member"}},
		file("src/deep/nested/x.txt", "deep"), // parents only implied
		{name: "bin/run.sh", body: "#!/bin/sh\n", mode: 0o700},
		{name: "bin/tool", body: "t", mode: 0o610},
		{name: "bin/plain", body: "p", mode: 0o666},
		file("empty", ""),
		file("unicode/日本語 café.txt", "ünï"),
		link("link-in", "src/main.go"),
		link("src/up", "../empty"),
		link("dots", "..hidden"),
		link("esc-abs", "/etc/passwd"),
		link("src/esc-rel", "../../outside"),
		{name: "src/", typ: tar.TypeDir, mode: 0o700}, // a repeated directory is mkdir -p
		file(long, "long"),
	}
}

// TestExtractHappyPath extracts a tree with every accepted kind of member
// under a restrictive umask and checks the exact tree, modes and summary.
func TestExtractHappyPath(t *testing.T) {
	old := syscall.Umask(0o077) // the modes must not depend on it
	t.Cleanup(func() { syscall.Umask(old) })

	l := newLayout(t)
	start := time.Now()
	stream := buildTar(t, happyEntries()...)
	sum, err := Extract(bytes.NewReader(stream), l.dest, roomy)
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}

	long := "long/" + strings.Repeat("n", 150)
	want := map[string]string{
		"src":                   "d 0755",
		"src/main.go":           "f 0644 package main\n",
		"src/deep":              "d 0755",
		"src/deep/nested":       "d 0755",
		"src/deep/nested/x.txt": "f 0644 deep",
		"bin":                   "d 0755",
		"bin/run.sh":            "f 0755 #!/bin/sh\n",
		"bin/tool":              "f 0755 t",
		"bin/plain":             "f 0644 p",
		"empty":                 "f 0644 ",
		"unicode":               "d 0755",
		"unicode/日本語 café.txt":  "f 0644 ünï",
		"link-in":               "l -> src/main.go",
		"src/up":                "l -> ../empty",
		"dots":                  "l -> ..hidden",
		"esc-abs":               "l -> /etc/passwd",
		"src/esc-rel":           "l -> ../../outside",
		"long":                  "d 0755",
		long:                    "f 0644 long",
	}
	if got := describeTree(t, l.dest); !reflect.DeepEqual(got, want) {
		t.Errorf("tree:\n got  %q\n want %q", got, want)
	}

	wantSum := Summary{
		Members: 15,
		Bytes:   int64(len("package main\n" + "deep" + "#!/bin/sh\n" + "t" + "p" + "ünï" + "long")),
		Files: []string{
			"src/main.go", "src/deep/nested/x.txt", "bin/run.sh", "bin/tool", "bin/plain", "empty",
			"unicode/日本語 café.txt", "link-in", "src/up", "dots", "esc-abs", "src/esc-rel", long,
		},
		EscapingSymlinks: []string{"esc-abs", "src/esc-rel"},
	}
	if !reflect.DeepEqual(sum, wantSum) {
		t.Errorf("summary:\n got  %+v\n want %+v", sum, wantSum)
	}

	// Archive times and owners are ignored: the files are as new as the
	// extraction (the archive says 1970).
	fi, err := os.Lstat(filepath.Join(l.dest, "src/main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.ModTime().Before(start.Add(-time.Minute)) {
		t.Errorf("mtime %v comes from the archive", fi.ModTime())
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Getuid() {
		t.Errorf("owner uid %d, want ours (%d)", st.Uid, os.Getuid())
	}
	l.assertContained(t)
}

// TestValidateMatchesExtract checks the pure validator reports the same
// summary, however the stream is chunked.
func TestValidateMatchesExtract(t *testing.T) {
	stream := buildTar(t, happyEntries()...)
	l := newLayout(t)
	want, err := Extract(bytes.NewReader(stream), l.dest, roomy)
	if err != nil {
		t.Fatal(err)
	}
	readers := map[string]io.Reader{
		"whole":    bytes.NewReader(stream),
		"one byte": iotest.OneByteReader(bytes.NewReader(stream)),
		"half":     iotest.HalfReader(bytes.NewReader(stream)),
	}
	for name, r := range readers {
		got, err := Validate(r, roomy)
		if err != nil {
			t.Errorf("%s: Validate: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Validate summary %+v, Extract's %+v", name, got, want)
		}
	}
}

// TestValidateDrainsTheTrailer checks the record padding `git archive`
// writes after the end-of-archive marker is read, so the producer never
// blocks on it, and counts against the cap.
func TestValidateDrainsTheTrailer(t *testing.T) {
	stream := append(buildTar(t, file("a", "a")), make([]byte, 8192)...)
	r := bytes.NewReader(stream)
	if _, err := Validate(r, roomy); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if r.Len() != 0 {
		t.Errorf("%d bytes left unread", r.Len())
	}
	_, err := Validate(bytes.NewReader(stream), Caps{MaxFiles: 1, MaxBytes: int64(len(stream) - 1)})
	if !errors.Is(err, ErrTooManyBytes) || err.Error() != "archive exceeds "+strconv.Itoa(len(stream)-1)+" bytes after 'a'" {
		t.Errorf("padding past the cap: err = %v", err)
	}
}

// failReader fails the test if anything reads it.
type failReader struct{ t *testing.T }

func (f failReader) Read([]byte) (int, error) {
	f.t.Error("the stream was read")
	return 0, io.ErrUnexpectedEOF
}

// TestExtractRefusesOccupiedDestination checks a destination holding
// anything but a regular .git file is refused before the stream is read,
// and left exactly as it was.
func TestExtractRefusesOccupiedDestination(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dest string)
	}{
		{"another file", func(t *testing.T, dest string) {
			write(t, filepath.Join(dest, "keep.txt"), "mine")
		}},
		{"no .git", func(t *testing.T, dest string) {
			must(t, os.Remove(filepath.Join(dest, ".git")))
		}},
		{"no .git but another file", func(t *testing.T, dest string) {
			must(t, os.Remove(filepath.Join(dest, ".git")))
			write(t, filepath.Join(dest, "keep.txt"), "mine")
		}},
		{".git is a directory", func(t *testing.T, dest string) {
			must(t, os.Remove(filepath.Join(dest, ".git")))
			must(t, os.Mkdir(filepath.Join(dest, ".git"), 0o755))
			write(t, filepath.Join(dest, ".git", "HEAD"), "ref: refs/heads/main\n")
		}},
		{".git is a symlink", func(t *testing.T, dest string) {
			must(t, os.Rename(filepath.Join(dest, ".git"), filepath.Join(dest, "..", "gitfile")))
			must(t, os.Symlink("../gitfile", filepath.Join(dest, ".git")))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newLayout(t)
			tc.setup(t, l.dest)
			before := describeAll(t, l.parent)
			_, err := Extract(failReader{t}, l.dest, roomy)
			checkRefusal(t, "Extract", err, ErrNotEmpty, "worktree not empty")
			if after := describeAll(t, l.parent); !reflect.DeepEqual(before, after) {
				t.Errorf("the destination changed:\n before %q\n after  %q", before, after)
			}
		})
	}
}

func TestExtractMissingDestination(t *testing.T) {
	_, err := Extract(failReader{t}, filepath.Join(t.TempDir(), "absent"), roomy)
	if !errors.Is(err, ErrExtraction) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want ErrExtraction wrapping ErrNotExist", err)
	}
	if !strings.HasPrefix(err.Error(), "export extraction failed: open worktree: ") {
		t.Errorf("text = %q", err)
	}
}

// TestWriterStaysInsideRoot bypasses the walk's tree, as a symlink
// planted in the destination by someone else would: the writes through it
// must fail and leave nothing outside.
func TestWriterStaysInsideRoot(t *testing.T) {
	l := newLayout(t)
	must(t, os.Symlink(l.outside, filepath.Join(l.dest, "abs")))
	must(t, os.Symlink("../outside", filepath.Join(l.dest, "rel")))
	ln, err := openLane(l.dest)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	w := newWriter(ln)
	for _, via := range []string{"abs", "rel"} {
		members := []*member{
			{raw: via + "/f", name: via + "/f", kind: fileNode, size: 1},
			{raw: via + "/d/", name: via + "/d", kind: dirNode},
			{raw: via + "/l", name: via + "/l", kind: linkNode, target: "x"},
			{
				raw: via + "/n/f", name: via + "/n/f", kind: fileNode, size: 1,
				placement: placement{newDirs: []string{via + "/n"}},
			},
		}
		for _, m := range members {
			ref := w.put(m, strings.NewReader("x"))
			if ref == nil {
				t.Errorf("put %s through a symlink out succeeded", m.raw)
				continue
			}
			if !errors.Is(ref, ErrExtraction) || ref.Member != m.raw {
				t.Errorf("put %s: %v (member %q)", m.raw, ref, ref.Member)
			}
		}
	}
	l.assertContained(t)
}

// describeAll describes everything under dir, .git files included.
func describeAll(t *testing.T, dir string) map[string]string { return describeTree(t, dir) }

func write(t *testing.T, p, body string) {
	t.Helper()
	must(t, os.WriteFile(p, []byte(body), 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
