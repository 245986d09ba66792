package transcript

import (
	"os"
	"path/filepath"
	"syscall"
)

// ReserveName is the file in a run directory that holds space back for
// the run's end: its last transcript line and run.json's end fields.
const ReserveName = ".end-reserve"

// reserveBytes is the space held back: run_end and run.json's rewrite
// (a new copy beside the old until the rename) take a few KiB each, with
// the last tool result and the last reply in both at most 16 KiB more.
const reserveBytes = 128 << 10

// Reserve holds space for a run's end on the runs root's file system: a
// run whose transcript filled the disk still records how it ended.
type Reserve struct{ path string }

// ReserveSpace writes ReserveName in dir with reserveBytes of real data
// (zeros written, not a sparse hole: a hole frees nothing). On a file
// system too full for it there is no reserve and a nil *Reserve, whose
// Release does nothing.
func ReserveSpace(dir string) *Reserve {
	path := filepath.Join(dir, ReserveName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil
	}
	_, werr := f.Write(make([]byte, reserveBytes))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
		return nil
	}
	return &Reserve{path: path}
}

// Release gives the space back, just before the run's end is written.
// Idempotent.
func (r *Reserve) Release() {
	if r == nil || r.path == "" {
		return
	}
	_ = os.Remove(r.path) // gone already: nothing is held
	r.path = ""
}
