//go:build !linux

package host

import "io/fs"

// statOf is fi's fileStat. Outside Linux there is no jail, and no ctime
// is read: the size, mode and mtime stand for it.
func statOf(fi fs.FileInfo) (fileStat, bool) {
	return fileStat{size: uint64(fi.Size()), mode: uint32(fi.Mode()), mtime: fi.ModTime().UnixNano()}, true
}
