// Package launcher starts runs for mission control the way an
// orchestrator does: `dirtywork run --detach` (and `resume --detach`),
// which return once the run exists and leave it going in its own session,
// so runs outlive the TUI. It also lists a server's models for the launch
// form.
package launcher

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/dirtywork/dirtywork/tui/backend"
)

// Launcher runs the dirtywork binary at Exe.
type Launcher struct {
	// Exe is the dirtywork binary (os.Executable when empty).
	Exe string
	// Env is the children's environment (the process's when nil).
	Env []string
	// APIKey is sent when listing models.
	APIKey string
}

// Args is the `dirtywork run --detach` argv (without the program) for
// spec.
func Args(spec backend.LaunchSpec) []string {
	args := []string{"run", "--detach", "--repo", spec.Repo}
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

// Launch starts a run and returns once it exists.
func (l *Launcher) Launch(ctx context.Context, spec backend.LaunchSpec) (backend.Launched, error) {
	return l.start(ctx, Args(spec))
}

// Resume starts `dirtywork resume --detach --feedback TEXT SLUG` against
// the model server the run used (resume carries the model, not the
// server: without --base-url it would ask the default one).
func (l *Launcher) Resume(ctx context.Context, run backend.Run, feedback string) (backend.Launched, error) {
	args := []string{"resume", "--detach", "--feedback", feedback}
	if base := runBaseURL(run.Transcript); base != "" {
		args = append(args, "--base-url", base)
	}
	return l.start(ctx, append(args, "--", run.Slug))
}

// runBaseURL is the base_url of a transcript's run_start ("" when it
// cannot be read).
func runBaseURL(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }() // read only
	line, err := bufio.NewReaderSize(f, 64<<10).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return ""
	}
	var start struct {
		Event   string `json:"event"`
		BaseURL string `json:"base_url"`
	}
	if json.Unmarshal(line, &start) != nil || start.Event != "run_start" {
		return ""
	}
	return start.BaseURL
}

// start runs a --detach command: it prints {slug, run_dir, transcript,
// pid} and exits 0 once the run exists; a refusal exits 2 with its
// "error:" line and hint on stderr, and comes back as a RefusedError.
func (l *Launcher) start(ctx context.Context, argv []string) (backend.Launched, error) {
	exe := l.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return backend.Launched{}, fmt.Errorf("find the dirtywork binary: %w", err)
		}
	}
	cmd := exec.CommandContext(ctx, exe, argv...) //nolint:gosec // our own binary with our own arguments
	cmd.Env = l.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return backend.Launched{}, refusal(stderr.String(), ee.ExitCode())
	case err != nil:
		return backend.Launched{}, fmt.Errorf("start dirtywork %s: %w", argv[0], err)
	}
	var got struct {
		Slug       string `json:"slug"`
		RunDir     string `json:"run_dir"`
		Transcript string `json:"transcript"`
		PID        int    `json:"pid"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &got); err != nil || got.Slug == "" {
		return backend.Launched{}, fmt.Errorf("dirtywork %s --detach printed no run: %q", argv[0], strings.TrimSpace(stdout.String()))
	}
	return backend.Launched{Slug: got.Slug, RunDir: got.RunDir, Transcript: got.Transcript, PID: got.PID}, nil
}

// refusal reads the "error:" line and the hint after it.
func refusal(stderr string, code int) error {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i, l := range lines {
		if msg, ok := strings.CutPrefix(l, "error: "); ok {
			hint := ""
			if i+1 < len(lines) {
				hint = strings.TrimSpace(lines[i+1])
			}
			return &backend.RefusedError{Msg: msg, Hint: hint}
		}
	}
	return fmt.Errorf("dirtywork exited %d: %s", code, strings.TrimSpace(stderr))
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
