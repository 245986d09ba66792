package cgroup

import "golang.org/x/sys/unix"

// access reports whether this process may write path.
func access(path string) bool { return unix.Access(path, unix.W_OK) == nil }
