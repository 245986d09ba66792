//go:build !linux

package volstore

import (
	"context"
	"fmt"
	"runtime"
)

// Available: a kernel-held size needs a Linux host.
func Available(context.Context, Daemon, bool) error {
	return fmt.Errorf("%w: loop devices are Linux's, this is %s", ErrUnavailable, runtime.GOOS)
}

// Create: loop devices are Linux's.
func Create(context.Context, string, string, int64, int64, int, int) (*Store, error) {
	return nil, fmt.Errorf("%w: loop devices are Linux's", ErrUnavailable)
}

// Usage: nothing is ever mounted.
func (s *Store) Usage() (bytes, entries int64, ok bool) { return 0, 0, false }

func releaseStore(string) error { return nil }

func releaseStoreFound(string) (bool, error) { return false, nil }

func listStores(string) ([]Listed, error) { return nil, nil }

func ensureMounted(string) error {
	return fmt.Errorf("%w: loop devices are Linux's", ErrUnavailable)
}

func storeTree(mount string) string { return mount }
