package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/engine"
	"github.com/dirtywork/dirtywork/transcript/termsafe"
)

// Detached runs: `run --detach` (and `resume --detach`) start the same
// command again as a child in its own session, wait until the child says
// its run exists for good (run dir, run.json and worktree made), print that
// on stdout and exit 0, while the child goes on without a terminal. A
// refusal reaches the parent before that point: its stderr and exit code
// are the child's, and nothing is created.

const (
	// detachFlag asks for a detached run.
	detachFlag = "detach"
	// detachedChildFlag marks the child (hidden): it announces its run on
	// the file descriptor handshakeFD once the run exists.
	detachedChildFlag = "detached-child"
	handshakeFD       = 3
	// stderrLogName is the detached run's stderr inside its run dir.
	stderrLogName = "stderr.log"
	// relayGrace bounds how long the parent waits for the child's last
	// stderr lines after the announcement.
	relayGrace = 2 * time.Second
)

// addDetachFlags registers --detach and the hidden child flag on cmd.
func addDetachFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Bool(detachFlag, false, "start the run in the background: print {slug, run_dir, transcript, pid} once it exists and exit 0 (see 'dirtywork runs wait')")
	f.Bool(detachedChildFlag, false, "")
	_ = f.MarkHidden(detachedChildFlag) // the flag exists: this cannot fail
}

// detachMode reads the flags: whether to start a detached child, and
// whether this process is one.
func detachMode(c *cobra.Command) (parent, child bool) {
	parent, _ = c.Flags().GetBool(detachFlag)
	child, _ = c.Flags().GetBool(detachedChildFlag)
	return parent && !child, child
}

// startDetached is the parent's side: start this command again, without
// --detach, as a child in a new session, relay its stderr until it
// announces its run, then print the announcement. A child that ends
// before announcing was refused: its exit code becomes ours.
func startDetached(ctx context.Context, ios *streams) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to start the run in the background: %w", err)
	}
	hsRead, hsWrite, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start the run in the background: %w", err)
	}
	defer func() { _ = hsRead.Close() }()
	errRead, errWrite, err := os.Pipe()
	if err != nil {
		_ = hsWrite.Close()
		return fmt.Errorf("start the run in the background: %w", err)
	}
	defer func() { _ = errRead.Close() }()
	cmd := exec.Command(exe, childArgs(ios.args)...)
	cmd.Stderr = errWrite // stdin and stdout: /dev/null
	cmd.ExtraFiles = []*os.File{hsWrite}
	// A session of its own: no controlling terminal, so closing the
	// terminal or Ctrl-C in it does not reach the run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	_ = hsWrite.Close() // the child has its copies
	_ = errWrite.Close()
	if err != nil {
		return fmt.Errorf("start the run in the background: %w", err)
	}

	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		_, _ = io.Copy(ios.errOut, errRead) // ends when the child stops writing there
	}()
	// Until the run exists, the parent stands for it: a signal to the
	// parent cancels the run as it would a foreground one.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGINT)
		case <-stop:
		}
	}()

	announcement, _ := io.ReadAll(io.LimitReader(hsRead, 64<<10))
	var started engine.Started
	if len(announcement) > 0 && json.Unmarshal(announcement, &started) == nil && started.Slug != "" {
		select {
		case <-relayed:
		case <-time.After(relayGrace):
		}
		// The child is on its own now; it is not ours to wait for.
		_ = cmd.Process.Release()
		// The child encoded it safely; escaping again costs nothing and
		// keeps a raw byte from ever reaching the terminal from here.
		if _, err := ios.out.Write(append(termsafe.EscapeJSON(bytes.TrimSpace(announcement)), '\n')); err != nil {
			return fmt.Errorf("print the run: %w", err)
		}
		return nil
	}
	// No announcement: the child ended (or closed the pipe) before its
	// run existed. Its stderr has said why.
	werr := cmd.Wait()
	<-relayed
	var ee *exec.ExitError
	if errors.As(werr, &ee) && ee.ExitCode() >= 0 {
		return silentExit(ee.ExitCode())
	}
	if werr == nil {
		return silentExit(ExitUsage) // ended 0 without a run: nothing was started
	}
	return fmt.Errorf("the background run ended before it started: %w", werr)
}

// childArgs are the parent's arguments without --detach, marked as the
// child's.
func childArgs(args []string) []string {
	out := make([]string, 0, len(args)+1)
	for i, a := range args {
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if a == "--"+detachFlag || a == "--"+detachFlag+"=true" || a == "--"+detachFlag+"=false" {
			continue
		}
		out = append(out, a)
	}
	// The marker goes right after the command name, before any "--".
	if len(out) > 0 {
		out = append([]string{out[0], "--" + detachedChildFlag}, out[1:]...)
	}
	return out
}

// detachedChild is the child's side, set up before the run starts: its
// stderr (the parent's pipe) is also kept in memory, and the announcement
// moves it into <run_dir>/stderr.log.
type detachedChild struct {
	mu     sync.Mutex
	early  bytes.Buffer
	moved  bool
	errOut io.Writer
}

// newDetachedChild prepares the child: writes to a parent that went away
// must fail, not kill the run.
func newDetachedChild(errOut io.Writer) *detachedChild {
	signal.Ignore(syscall.SIGPIPE)
	return &detachedChild{errOut: errOut}
}

// Write is the child's stderr.
func (d *detachedChild) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.moved {
		d.early.Write(p)
	}
	_, _ = d.errOut.Write(p) // a parent gone away costs these lines only there
	return len(p), nil
}

// announce moves stderr into the run dir and tells the parent the run
// exists. Once it returns the process no longer writes to the parent.
func (d *detachedChild) announce(s engine.Started) {
	d.mu.Lock()
	defer d.mu.Unlock()
	log, err := os.OpenFile(filepath.Join(s.RunDir, stderrLogName), os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err == nil {
		// Best effort: the log is for people, who read it with cat, less
		// and tail -f: neutralised as the terminal's stderr is. (What the
		// parent relayed of these lines it neutralised itself.)
		_, _ = io.WriteString(log, termsafe.String(d.early.String()))
		// fd 2 itself becomes the log, so the runtime's own last words
		// (a crash) land there too, and nothing holds the parent's pipe.
		if err = unix.Dup2(int(log.Fd()), 2); err == nil {
			// The later lines likewise.
			d.errOut = termsafe.NewWriter(os.Stderr)
		}
		_ = log.Close()
	}
	if err != nil {
		// No log: nothing can be said any more, and the parent's pipe
		// must not stay open.
		if null, nerr := os.OpenFile(os.DevNull, os.O_WRONLY, 0); nerr == nil {
			_ = unix.Dup2(int(null.Fd()), 2)
			_ = null.Close()
		}
		d.errOut = io.Discard
	}
	d.moved = true
	d.early = bytes.Buffer{}
	hs := os.NewFile(handshakeFD, "announcement")
	if hs == nil {
		return
	}
	data, _ := termsafe.EncodeJSON(s)
	_, _ = hs.Write(data) // a parent gone away: the run goes on
	_ = hs.Close()
}
