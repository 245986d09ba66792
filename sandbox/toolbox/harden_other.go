//go:build !linux

package toolbox

import "errors"

// errNotLinux: the server hardens itself with Linux-only means, and only
// ever runs in a Linux container.
var errNotLinux = errors.New("the tool server runs on Linux only")

func setNonDumpable() error { return errNotLinux }

func isDumpable() bool { return true }

func becomeSubreaper() error { return errNotLinux }

func killAdopted() int { return 0 }
