//go:build !linux

package docker

import (
	"context"
	"fmt"
	"runtime"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
)

// volumeStore is the file system a work volume lives in when the kernel
// holds its size: Linux only.
type volumeStore struct {
	image, device, mount string
	bytes, entries       int64
}

// storeAvailable: a kernel-held size needs a Linux host.
func storeAvailable(context.Context, daemon.Engine, bool) error {
	return fmt.Errorf("%w: loop devices are Linux's, this is %s", errStoreUnavailable, runtime.GOOS)
}

func createStore(context.Context, string, string, int64, int64) (*volumeStore, error) {
	return nil, fmt.Errorf("%w: loop devices are Linux's", errStoreUnavailable)
}

func (s *volumeStore) usage() (bytes, entries int64, ok bool) { return 0, 0, false }

func releaseStore(string) error { return nil }

func releaseStoreFound(string) (bool, error) { return false, nil }

func listStores(string) ([]VolumeStore, error) { return nil, nil }

func ensureMounted(string) error {
	return fmt.Errorf("%w: loop devices are Linux's", errStoreUnavailable)
}

func storeTree(mount string) string { return mount }
