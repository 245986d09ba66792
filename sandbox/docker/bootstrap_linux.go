package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	workerimage "github.com/dirtywork/dirtywork/docker"
)

// Seams for tests: who we run as and where debootstrap is.
var (
	geteuid  = os.Geteuid
	lookPath = exec.LookPath
)

// BootstrapBase makes the worker image's Debian base where no registry is
// reachable and returns its Id: it runs the embedded bootstrap-base.sh
// (debootstrap --variant=minbase bookworm) into a temporary directory
// under $TMPDIR, which must allow executables and device nodes, then
// imports that tree as the image tag through the Engine API. It needs root
// (ErrNeedsRoot) and debootstrap (ErrNoDebootstrap); the script's output
// goes to progress. The temporary directory is removed afterwards unless
// something is still mounted inside it, which is reported instead.
func (c *Client) BootstrapBase(ctx context.Context, tag string, progress io.Writer) (id string, err error) {
	if err := CheckReference(tag); err != nil {
		return "", err
	}
	if geteuid() != 0 {
		return "", ErrNeedsRoot
	}
	if _, err := lookPath("debootstrap"); err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoDebootstrap, err)
	}
	work, err := os.MkdirTemp("", "dirtywork-base-")
	if err != nil {
		return "", fmt.Errorf("make the bootstrap directory: %w", err)
	}
	defer func() {
		if rmErr := removeWork(work); rmErr != nil {
			err = errors.Join(err, rmErr)
		}
	}()
	script := filepath.Join(work, "bootstrap-base.sh")
	if err := os.WriteFile(script, []byte(workerimage.BootstrapScript()), 0o700); err != nil {
		return "", fmt.Errorf("write the bootstrap script: %w", err)
	}
	rootfs := filepath.Join(work, "rootfs")
	if err := runBootstrap(ctx, script, rootfs, progress); err != nil {
		return "", err
	}
	if mounts, err := mountsUnder(work); err != nil || len(mounts) > 0 {
		// The deferred removal refuses too, and says what is mounted.
		return "", errors.New("bootstrap-base.sh left file systems mounted in its target; nothing was imported")
	}
	return c.importTree(ctx, tag, rootfs, progress)
}

// runBootstrap runs the script on rootfs in its own process group, so that
// cancelling stops debootstrap too. The group gets SIGTERM first: the
// script then unmounts what debootstrap mounted before it exits.
func runBootstrap(ctx context.Context, script, rootfs string, progress io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, BootstrapTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/bash", script, rootfs)
	cmd.Stdout, cmd.Stderr = progress, progress
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("run bootstrap-base.sh: %w after %s", ErrTimedOut, BootstrapTimeout)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("run bootstrap-base.sh: %w", ctx.Err())
		}
		return fmt.Errorf("run bootstrap-base.sh (its output is above): %w", err)
	}
	return nil
}

// importTree streams rootfs as a tar archive into an image import. A
// failure to read the tree is reported over the import's own error, which
// it causes.
func (c *Client) importTree(ctx context.Context, tag, rootfs string, progress io.Writer) (string, error) {
	pr, pw := io.Pipe()
	archived := make(chan error, 1)
	go func() {
		err := writeTree(pw, rootfs)
		_ = pw.CloseWithError(err) // always nil; a nil err closes normally
		archived <- err
	}()
	id, err := c.ImportImage(ctx, tag, pr, progress)
	// An import that stopped early leaves the writer blocked on the pipe.
	_ = pr.CloseWithError(errors.New("import ended")) // always nil
	if archErr := <-archived; archErr != nil {
		return "", archErr
	}
	return id, err
}

// removeWork removes the bootstrap directory, but never through a mount
// still inside it: that would delete the mounted file system's files.
func removeWork(work string) error {
	mounts, err := mountsUnder(work)
	if err != nil || len(mounts) > 0 {
		return leftMounts(work, mounts, err)
	}
	if err := os.RemoveAll(work); err != nil {
		return fmt.Errorf("remove the bootstrap directory: %w", err)
	}
	return nil
}

// leftMounts is the error for a bootstrap directory that cannot be safely
// used or removed.
func leftMounts(work string, mounts []string, err error) error {
	if err != nil {
		return fmt.Errorf("check %s for mounts (kept; remove it by hand once nothing is mounted inside): %w", work, err)
	}
	return fmt.Errorf("%s is kept: file systems are still mounted inside it (%s); unmount them, then remove it",
		work, strings.Join(mounts, ", "))
}
