package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
)

// ErrImageMissing: the worker image is not on the daemon. Nothing is ever
// pulled; the message names the command that builds it.
var ErrImageMissing = errors.New("worker image missing")

// ErrLowDiskSpace: the local daemon's storage has less free space than the
// run's floor (--min-free-mb).
var ErrLowDiskSpace = errors.New("not enough free disk space for docker")

// Preflight checks, creating nothing, that a run with cfg can start
// (S-6…S-10): the daemon connect gives answers (within
// daemon.QueryTimeout, so a hanging daemon is refused in time:
// daemon.ErrDaemonUnreachable), the image is on it (ErrImageMissing),
// cfg.Toolbox has a tool server for the image's architecture
// (ErrNoToolbox), the run's container and volume names are free
// (daemon.ErrConflict), and a daemon on this machine has cfg.MinFreeMB
// free (ErrLowDiskSpace). Errors are worded for the user. The names are checked
// only when cfg.Slug is set: the engine's preflight runs before the run
// has one, and Open checks them again in any case.
func Preflight(ctx context.Context, connect Connect, cfg Config) error {
	var names objectNames
	if cfg.Slug != "" {
		var err error
		if names, err = namesFor(cfg.Slug); err != nil {
			return err
		}
	}
	if _, err := limitsOf(cfg); err != nil {
		return err
	}
	cl, err := connect()
	if err != nil {
		return err
	}
	defer func() { _ = cl.Close() }() // idle connections only
	if _, err := cl.ServerVersion(ctx); err != nil {
		if errors.Is(err, daemon.ErrDaemonUnreachable) {
			return fmt.Errorf("no docker daemon answers: %w (start Docker, or use --sandbox none)", err)
		}
		return fmt.Errorf("%w: %w (start Docker, or use --sandbox none)", daemon.ErrDaemonUnreachable, err)
	}
	img, err := cl.InspectImage(ctx, cfg.Image)
	if err != nil {
		return imageError(cfg.Image, err)
	}
	if _, err := imageToolbox(cfg, img); err != nil {
		return err
	}
	if cfg.Slug != "" {
		if err := checkNamesFree(ctx, cl, names); err != nil {
			return err
		}
	}
	if cl.Local() && cfg.MinFreeMB > 0 {
		return checkFreeSpace(ctx, cl, cfg.MinFreeMB)
	}
	return nil
}

// imageError words a failed image lookup: a missing image names the
// command that builds it.
func imageError(image string, err error) error {
	if !errors.Is(err, daemon.ErrNotFound) {
		return err
	}
	cmd := "dirtywork image build --tag " + shellWord(image)
	return fmt.Errorf("%w: image %s is not on the docker daemon and dirtywork never pulls; build it with: %s "+
		"(where no container registry is reachable: %s --bootstrap-base)", ErrImageMissing, image, cmd, cmd)
}

// checkNamesFree refuses when the run's container or volumes exist
// (S-10): they are never removed here, the message says how to. The
// daemon is asked about every name at once; the first name taken, in
// order, is the one reported.
func checkNamesFree(ctx context.Context, eng daemon.Engine, n objectNames) error {
	type check struct {
		kind, name, remove string
		look               func(context.Context, string) error
	}
	inspect := func(ctx context.Context, name string) error { _, err := eng.InspectContainer(ctx, name); return err }
	labels := func(ctx context.Context, name string) error { _, err := eng.InspectVolume(ctx, name); return err }
	checks := []check{
		{"container", n.Container, "docker rm -f", inspect},
		{"container", n.Setup, "docker rm -f", inspect},
		{"volume", n.WorkVolume, "docker volume rm", labels},
		{"volume", n.ToolsVolume, "docker volume rm", labels},
	}
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() { errs[i] = c.look(ctx, c.name) })
	}
	wg.Wait()
	for i, c := range checks {
		switch err := errs[i]; {
		case err == nil:
			return fmt.Errorf("%w: %s %s already exists; remove it with: %s %s", daemon.ErrConflict, c.kind, c.name, c.remove, c.name)
		case !errors.Is(err, daemon.ErrNotFound):
			return err
		}
	}
	return nil
}

// dockerRoot is the local daemon's storage directory.
func dockerRoot(ctx context.Context, eng daemon.Engine) (string, error) {
	root, err := eng.DockerRoot(ctx)
	if err == nil && root == "" {
		root = "/"
	}
	return root, err
}

// freeMB is the space free to unprivileged users on path's file system.
func freeMB(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("measure free space of %s: %w", path, err)
	}
	return int64(st.Bavail) * int64(st.Bsize) >> 20, nil //nolint:unconvert // Bsize is int64 on Linux, uint32 on macOS
}

// checkFreeSpace refuses when the daemon's storage has less than floorMB
// free.
func checkFreeSpace(ctx context.Context, eng daemon.Engine, floorMB int) error {
	root, err := dockerRoot(ctx, eng)
	if err != nil {
		return err
	}
	free, err := freeMB(root)
	if err != nil {
		return err
	}
	if free < int64(floorMB) {
		return fmt.Errorf("%w: %s has %d MB free, under the %d MB floor (free space, or lower --min-free-mb)",
			ErrLowDiskSpace, root, free, floorMB)
	}
	return nil
}

// shellWord quotes s for a POSIX shell unless it is made of characters an
// image reference uses.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
