package seal

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ctimeNS is the entry's change time in nanoseconds.
func ctimeNS(st *unix.Stat_t) int64 { return st.Ctim.Nano() }

// stMode is the entry's type and mode bits.
func stMode(st *unix.Stat_t) uint32 { return uint32(st.Mode) }

// fileCtime is the open file's change time.
func fileCtime(f *os.File) (time.Time, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, ctimeNS(&st)), nil
}
