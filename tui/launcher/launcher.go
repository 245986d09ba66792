// Package launcher starts runs for mission control as processes of their
// own, detached from the TUI (a new session, stdin from /dev/null, output
// to files), so they go on when it quits: the same `dirtywork run` an
// orchestrator calls. It also lists a server's models for the launch form.
package launcher

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/dirtywork/dirtywork/tui/backend"
)

// Launcher runs the dirtywork binary at Exe.
type Launcher struct {
	// Exe is the dirtywork binary (os.Executable when empty).
	Exe string
	// Env is the children's environment (the process's when nil).
	Env []string
	// LogDir keeps each child's stdout and stderr (os.TempDir when
	// empty).
	LogDir string
	// APIKey is sent when listing models.
	APIKey string
	// StartTimeout bounds the wait for a child to say where its
	// transcript is (60 s when 0).
	StartTimeout time.Duration
}

// Args is the `dirtywork run` argv (without the program) for spec.
func Args(spec backend.LaunchSpec) []string {
	args := []string{"run", "--repo", spec.Repo}
	if spec.Model != "" {
		args = append(args, "--model", spec.Model)
	}
	if spec.BaseURL != "" {
		args = append(args, "--base-url", spec.BaseURL)
	}
	if spec.Sandbox != "" {
		args = append(args, "--sandbox", spec.Sandbox)
	}
	if spec.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(spec.MaxTurns))
	}
	if spec.Verify != "" {
		args = append(args, "--verify", spec.Verify)
	}
	args = append(args, spec.ExtraArgs...)
	return append(args, "--", spec.Task)
}

// Launch starts a run and returns once it has its run dir.
func (l *Launcher) Launch(ctx context.Context, spec backend.LaunchSpec) (backend.Launched, error) {
	return l.start(ctx, Args(spec))
}

// Resume starts `dirtywork resume SLUG --feedback TEXT` the same way.
func (l *Launcher) Resume(ctx context.Context, slug, feedback string) (backend.Launched, error) {
	return l.start(ctx, []string{"resume", slug, "--feedback", feedback})
}

func (l *Launcher) exe() (string, error) {
	if l.Exe != "" {
		return l.Exe, nil
	}
	return os.Executable()
}

// start runs argv detached and waits until its stderr names the
// transcript (the run dir exists then), or it exits: exit 2 is a refusal
// whose "error:" line and hint come back as a RefusedError.
func (l *Launcher) start(ctx context.Context, argv []string) (backend.Launched, error) {
	exe, err := l.exe()
	if err != nil {
		return backend.Launched{}, fmt.Errorf("find the dirtywork binary: %w", err)
	}
	dir := l.LogDir
	if dir == "" {
		dir = os.TempDir()
	}
	out, err := os.CreateTemp(dir, "dirtywork-launch-*.json")
	if err != nil {
		return backend.Launched{}, fmt.Errorf("launch: %w", err)
	}
	errPath := strings.TrimSuffix(out.Name(), ".json") + ".log"
	errf, err := os.OpenFile(errPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		_ = out.Close()
		return backend.Launched{}, fmt.Errorf("launch: %w", err)
	}
	cmd := exec.Command(exe, argv...) //nolint:gosec // our own binary with our own arguments
	cmd.Env = l.Env
	cmd.Stdout, cmd.Stderr = out, errf
	// Its own session: no terminal signal (Ctrl-C in the TUI, the
	// terminal closing) reaches it, and it outlives the TUI.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		_ = errf.Close()
		return backend.Launched{}, fmt.Errorf("launch dirtywork run: %w", err)
	}
	_ = out.Close() // the child holds its own descriptors
	_ = errf.Close()
	exited := make(chan error, 1)
	// Reap it whenever it ends, so it never lingers as a zombie.
	go func() { exited <- cmd.Wait() }()

	timeout := l.StartTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		if tr := transcriptLine(errPath); tr != "" {
			runDir := filepath.Dir(tr)
			return backend.Launched{Slug: filepath.Base(runDir), RunDir: runDir, Transcript: tr, PID: cmd.Process.Pid}, nil
		}
		select {
		case err := <-exited:
			if tr := transcriptLine(errPath); tr != "" {
				runDir := filepath.Dir(tr)
				return backend.Launched{Slug: filepath.Base(runDir), RunDir: runDir, Transcript: tr, PID: cmd.Process.Pid}, nil
			}
			return backend.Launched{}, refusal(errPath, err)
		case <-deadline.C:
			return backend.Launched{}, fmt.Errorf("dirtywork run said nothing for %s (see %s)", timeout, errPath)
		case <-ctx.Done():
			return backend.Launched{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// transcriptLine finds "transcript: <path>" in the child's stderr.
func transcriptLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "transcript: "); ok && filepath.IsAbs(p) {
			return p
		}
	}
	return ""
}

// refusal reads the child's "error:" line and hint.
func refusal(path string, waitErr error) error {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i, l := range lines {
		if msg, ok := strings.CutPrefix(l, "error: "); ok {
			hint := ""
			if i+1 < len(lines) {
				hint = strings.TrimSpace(lines[i+1])
			}
			return &backend.RefusedError{Msg: msg, Hint: hint}
		}
	}
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		return fmt.Errorf("dirtywork run exited %d without a message (see %s)", ee.ExitCode(), path)
	}
	return fmt.Errorf("dirtywork run ended before it started: %w (see %s)", waitErr, path)
}

// Models lists the server's models with go-openai.
func (l *Launcher) Models(ctx context.Context, baseURL string) ([]string, error) {
	cfg := openai.DefaultConfig(l.APIKey)
	cfg.BaseURL = strings.TrimRight(baseURL, "/")
	list, err := openai.NewClientWithConfig(cfg).ListModels(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the models of %s: %w", baseURL, err)
	}
	out := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		out = append(out, m.ID)
	}
	return out, nil
}

var _ backend.Launcher = (*Launcher)(nil)
