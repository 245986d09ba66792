package export

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// entry is one member of a test archive.
type entry struct {
	name string
	typ  byte // tar.TypeReg when zero
	body string
	mode int64
	link string
	// size, when non-zero, is the declared size instead of len(body).
	size int64
	pax  map[string]string
	// cut ends the stream right after this member's header, as a
	// producer killed mid-member would.
	cut bool
}

// buildTar renders entries as a tar stream, ownership and times set to
// values Extract must ignore.
func buildTar(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:       e.name,
			Typeflag:   e.typ,
			Mode:       e.mode,
			Linkname:   e.link,
			Size:       int64(len(e.body)),
			Uid:        4242,
			Gid:        4242,
			ModTime:    time.Unix(86400, 0),
			PAXRecords: e.pax,
		}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
		}
		if hdr.Typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if e.size != 0 {
			hdr.Size = e.size
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			hdr = &tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: e.name, PAXRecords: e.pax}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("write header %q: %v", e.name, err)
		}
		if e.cut {
			return buf.Bytes()
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatalf("write body %q: %v", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatalf("close tar: %v", err)
	}
	return buf.Bytes()
}

// dirEntry, file, link and special are shorthands for table entries.
func dirEntry(name string) entry          { return entry{name: name, typ: tar.TypeDir, mode: 0o755} }
func file(name, body string) entry        { return entry{name: name, body: body} }
func link(name, target string) entry      { return entry{name: name, typ: tar.TypeSymlink, link: target} }
func special(name string, typ byte) entry { return entry{name: name, typ: typ} }

// layout is a destination laid out as the export finds it: parent holds
// the worktree (holding only its .git file) and, beside it, outside, a
// directory nothing may ever be written into.
type layout struct {
	parent, dest, outside string
}

const gitFileBody = "gitdir: /nowhere/.git/worktrees/wt\n"

func newLayout(t testing.TB) layout {
	t.Helper()
	parent := t.TempDir()
	l := layout{parent: parent, dest: filepath.Join(parent, "wt"), outside: filepath.Join(parent, "outside")}
	for _, dir := range []string{l.dest, l.outside} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(l.dest, ".git"), []byte(gitFileBody), 0o644); err != nil {
		t.Fatal(err)
	}
	return l
}

// assertContained fails unless parent still holds only wt and outside,
// and outside is still empty.
func (l layout) assertContained(t testing.TB) {
	t.Helper()
	if got := names(t, l.parent); !slices.Equal(got, []string{"outside", "wt"}) {
		t.Fatalf("entries beside the worktree = %q, want only outside and wt", got)
	}
	if got := names(t, l.outside); len(got) != 0 {
		t.Fatalf("written outside the worktree: %q", got)
	}
}

// assertOnlyGit fails unless dest holds only its untouched .git file.
func (l layout) assertOnlyGit(t testing.TB) {
	t.Helper()
	if got := names(t, l.dest); !slices.Equal(got, []string{".git"}) {
		t.Fatalf("worktree holds %q, want only .git", got)
	}
	b, err := os.ReadFile(filepath.Join(l.dest, ".git"))
	if err != nil || string(b) != gitFileBody {
		t.Fatalf(".git = %q, %v; want it untouched", b, err)
	}
}

func names(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// describeTree describes every entry under dest but .git: "d 0755", "f 0644 <body>",
// "l -> <target>".
func describeTree(t testing.TB, dest string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dest, p)
		if rel == "." || rel == ".git" {
			return nil
		}
		rel = filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			got[rel] = "l -> " + target
		case fi.IsDir():
			got[rel] = "d " + modeString(fi.Mode())
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			got[rel] = "f " + modeString(fi.Mode()) + " " + string(b)
		default:
			got[rel] = "? " + fi.Mode().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func modeString(m fs.FileMode) string { return fmt.Sprintf("%04o", uint32(m.Perm())) }

// asRefusal fails unless err is a *Refusal.
func asRefusal(t testing.TB, err error) *Refusal {
	t.Helper()
	var ref *Refusal
	if !errors.As(err, &ref) {
		t.Fatalf("error %v (%T) is not a *Refusal", err, err)
	}
	return ref
}
