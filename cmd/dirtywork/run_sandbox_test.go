package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/engine"
	"github.com/dirtywork/dirtywork/engine/provider/scripted"
	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
)

// docker is the default sandbox; without a daemon the run is refused at
// preflight, naming the daemon and the way to run without docker, and
// nothing is created.
func TestRunDockerWithoutDaemonIsRefused(t *testing.T) {
	e := newE2E(t, `{"turns":[{"finish":"x"}]}`)
	for _, sandboxArgs := range [][]string{{"--sandbox", "docker"}, nil} {
		args := append([]string{"run", "--repo", e.repo, "--base-url", e.base, "--model", scripted.DefaultModel}, sandboxArgs...)
		out, errOut, code, err := runCLIProcess(t, "", []string{"DIRTYWORK_HOME=" + e.home, "DOCKER_HOST=unix:///nonexistent"},
			append(args, "task")...)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		last := lines[len(lines)-1]
		if code != 2 || out != "" || !strings.Contains(errOut, "error: ") || !strings.Contains(errOut, "daemon") ||
			!strings.Contains(last, "--sandbox none") {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want exit 2 naming the daemon, hint --sandbox none", sandboxArgs, code, out, errOut)
		}
		if entries, _ := os.ReadDir(filepath.Join(e.home, "runs")); len(entries) != 0 {
			t.Fatalf("a refused run left run dirs: %v", entries)
		}
		if _, err := os.Stat(filepath.Join(e.repo, ".worktrees")); !os.IsNotExist(err) {
			t.Fatalf("a refused run made .worktrees: %v", err)
		}
	}
}

// A missing worker image's hint is the exact command that builds it.
func TestPreflightHintForMissingImage(t *testing.T) {
	t.Parallel()
	spec := engine.Spec{Docker: engine.DockerSpec{Image: "dirtywork-worker:custom"}}
	missing := &engine.PreflightError{Msg: "no image", Hint: "generic", Err: fmt.Errorf("inspect: %w", workspace.ErrImageMissing)}
	hint := preflightHint(missing, spec)
	if !strings.Contains(hint, "build it with: dirtywork image build --tag dirtywork-worker:custom ") ||
		!strings.Contains(hint, "--sandbox none") {
		t.Fatalf("hint %q", hint)
	}
	other := &engine.PreflightError{Msg: "daemon", Hint: "start it", Err: errors.New("down")}
	if got := preflightHint(other, spec); got != "start it" {
		t.Fatalf("hint %q, want the engine's", got)
	}
}

// run's default image is the one `image build` makes by default, so the
// hint's build command and a plain run agree.
func TestRunDefaultImageIsWhatImageBuildMakes(t *testing.T) {
	t.Parallel()
	run := newRunCmd(&streams{}).Flags().Lookup("image").DefValue
	build := newImageBuildCmd(&streams{}).Flags().Lookup("tag").DefValue
	if run != build || !strings.HasPrefix(run, "dirtywork-worker:") {
		t.Fatalf("run --image defaults to %q, image build --tag to %q", run, build)
	}
	if got := imageBuildCommand(run, false); got != "dirtywork image build" {
		t.Fatalf("the default image's build command is %q", got)
	}
}
