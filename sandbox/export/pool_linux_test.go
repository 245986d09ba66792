package export

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// openDescriptors counts this process's open file descriptors.
func openDescriptors(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// The files queued for one directory share one duplicate of its
// descriptor, whatever their number, and every duplicate is closed once
// the pool is. (Not parallel: it swaps pooledCreate and counts the
// process's descriptors.)
func TestPoolSharesOneDescriptorPerDirectoryRun(t *testing.T) {
	dest := t.TempDir()
	for _, d := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(dest, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dirs := map[string]int{}
	for _, d := range []string{"a", "b"} {
		fd, err := unix.Open(filepath.Join(dest, d), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Close(fd) })
		dirs[d] = fd
	}
	// The workers wait at their first create until the queues are
	// counted, so every queued job still holds what it was given.
	gate := make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	defer release()
	real := pooledCreate
	t.Cleanup(func() { pooledCreate = real })
	pooledCreate = func(dirfd int, base string, perm uint32) (int, error) {
		<-gate
		return real(dirfd, base, perm)
	}
	before := openDescriptors(t)
	p := newCreatePool()
	const each = 100
	for _, d := range []string{"a", "b"} {
		for i := range each {
			base := fmt.Sprintf("f%03d", i)
			m := &member{raw: d + "/" + base, name: d + "/" + base, kind: fileNode, size: 1}
			if ref := p.add(m, dirs[d], base, strings.NewReader("x")); ref != nil {
				t.Fatal(ref)
			}
		}
	}
	if held := openDescriptors(t) - before; held > 2 {
		t.Errorf("%d descriptors held for %d queued files in 2 directories, want one a directory", held, 2*each)
	}
	release()
	if ref := p.close(); ref != nil {
		t.Fatal(ref)
	}
	if left := openDescriptors(t) - before; left > 0 {
		t.Errorf("%d descriptors left open after the pool closed", left)
	}
	for _, d := range []string{"a", "b"} {
		entries, err := os.ReadDir(filepath.Join(dest, d))
		if err != nil || len(entries) != each {
			t.Errorf("%s holds %d files (%v), want %d", d, len(entries), err, each)
		}
	}
}
