package export

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The files the pool creates off the walk's goroutine come out as the
// walk's own would: every body, mode, zero-filled file and hard link to a
// file still queued, across many directories, under a narrowing umask.
func TestExtractPooledFilesAreWhole(t *testing.T) {
	old := syscall.Umask(0o077)
	t.Cleanup(func() { syscall.Umask(old) })
	l := newLayout(t)
	var entries []entry
	want := map[string]string{}
	for d := range 12 {
		dir := fmt.Sprintf("d%02d", d)
		want[dir] = "d 0755"
		for f := range 40 {
			name := fmt.Sprintf("%s/f%02d", dir, f)
			body := fmt.Sprintf("%s body %d\n", name, f)
			e := entry{name: name, body: body, mode: 0o644}
			switch f % 5 {
			case 1:
				e.mode, want[name] = 0o700, "f 0755 "+body
			case 2: // past pooledMax: written by the walk itself
				e.body = strings.Repeat(body, pooledMax/len(body)+1)
				want[name] = "f 0644 " + e.body
			case 3: // all zeros: a hole
				e.body = string(make([]byte, 8<<10))
				want[name] = "f 0644 " + e.body
			default:
				want[name] = "f 0644 " + body
			}
			entries = append(entries, e)
			if f%7 == 0 { // a link to the file just queued
				entries = append(entries, hardlink(name+".hl", name))
				want[name+".hl"] = want[name]
			}
		}
	}
	sum, err := Extract(bytes.NewReader(buildTar(t, entries...)), l.dest, caps20k)
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	if sum.Members != int64(len(entries)) {
		t.Errorf("%d members, want %d", sum.Members, len(entries))
	}
	if got := describeTree(t, l.dest); !reflect.DeepEqual(got, want) {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: got %.40q, want %.40q", k, got[k], v)
			}
		}
		t.Fatalf("tree has %d entries, want %d", len(got), len(want))
	}
	st, err := os.Stat(filepath.Join(l.dest, "d03/f07"))
	if err != nil || st.Sys().(*syscall.Stat_t).Nlink != 2 {
		t.Errorf("d03/f07 is not hard-linked: %v", err)
	}
	l.assertContained(t)
}

// A file the pool fails to create refuses the extraction as the walk's
// own failure would, naming the member, and the worktree is left holding
// only its .git, whatever the other goroutines wrote meanwhile. (Not
// parallel: it swaps pooledCreate.)
func TestExtractPooledWriteFailureRefusesAndClears(t *testing.T) {
	l := newLayout(t)
	var entries []entry
	for d := range 6 {
		for f := range 50 {
			entries = append(entries, file(fmt.Sprintf("d%d/f%02d", d, f), "x"))
		}
	}
	const failing = "d3/f10"
	real := pooledCreate
	t.Cleanup(func() { pooledCreate = real })
	pooledCreate = func(dirfd int, base string, perm uint32) (int, error) {
		if base == "f10" {
			if fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY, 0); err == nil {
				var st unix.Stat_t
				_ = unix.Fstat(fd, &st)
				_ = unix.Close(fd)
				if dst, err := os.Stat(filepath.Join(l.dest, "d3")); err == nil && dst.Sys().(*syscall.Stat_t).Ino == st.Ino {
					return -1, unix.ENOSPC
				}
			}
		}
		return real(dirfd, base, perm)
	}
	_, err := Extract(bytes.NewReader(buildTar(t, entries...)), l.dest, caps20k)
	var ref *Refusal
	if !errors.As(err, &ref) {
		t.Fatalf("Extract = %v, want a refusal", err)
	}
	if !errors.Is(err, ErrExtraction) || !strings.Contains(ref.Reason, "no space left on device") || ref.Member != failing {
		t.Errorf("refusal %+v (%v), want %s's create failure", ref, err, failing)
	}
	l.assertOnlyGit(t)
	l.assertContained(t)
}
