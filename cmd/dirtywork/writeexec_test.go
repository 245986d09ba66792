package main

import (
	"os"
	"syscall"
)

// writeExecutable writes a file the test then executes. While the file is
// open for writing no process may be forked from this one: a child forked
// then holds the write descriptor until its own exec, and executing the
// file meanwhile fails with ETXTBSY ("text file busy"). Parallel tests
// fork all the time, and a test binary's copy takes long enough to write
// that one of them lands in the window. Forks take syscall.ForkLock for
// writing, so holding it for reading keeps them out.
func writeExecutable(path string, data []byte, perm os.FileMode) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	return os.WriteFile(path, data, perm)
}
