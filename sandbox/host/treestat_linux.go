package host

import (
	"io/fs"
	"syscall"
)

// statOf is fi's fileStat.
func statOf(fi fs.FileInfo) (fileStat, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStat{}, false
	}
	return fileStat{
		ino: st.Ino, size: uint64(st.Size), mode: st.Mode,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(),
	}, true
}
