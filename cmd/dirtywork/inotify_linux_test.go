package main

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// closeWatch counts the closes of one file that was open only for
// reading, by anyone: how a test sees another process look at a file
// (a liveness probe, a poll of run.json) without sleeping and hoping it
// has.
type closeWatch struct {
	t    *testing.T
	fd   int
	name string
}

// watchReadCloses starts counting the read-only closes of the file path.
// Start it before the process that reads the file.
func watchReadCloses(t *testing.T, path string) *closeWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	// The directory, not the file: the file may not exist yet.
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(path), unix.IN_CLOSE_NOWRITE); err != nil {
		t.Fatalf("watch %s: %v", filepath.Dir(path), err)
	}
	return &closeWatch{t: t, fd: fd, name: filepath.Base(path)}
}

// await waits until the file was closed after reading n times in all,
// failing the test after within.
func (w *closeWatch) await(n int, within time.Duration) {
	w.t.Helper()
	deadline := time.Now().Add(within)
	buf := make([]byte, 64<<10)
	for seen := 0; seen < n; {
		left := time.Until(deadline)
		if left <= 0 {
			w.t.Fatalf("%s was read %d times within %s, want %d", w.name, seen, within, n)
		}
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, int(min(left, time.Second)/time.Millisecond)+1); err != nil && err != unix.EINTR {
			w.t.Fatalf("poll inotify: %v", err)
		}
		k, err := unix.Read(w.fd, buf)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil {
			w.t.Fatalf("read inotify: %v", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= k; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			if string(bytes.TrimRight(name, "\x00")) == w.name {
				seen++
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}
