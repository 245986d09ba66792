package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
	"github.com/dirtywork/dirtywork/transcript"
)

// hostModeHint ends every docker refusal's hint: the way to run without
// docker at all.
const hostModeHint = "run with --sandbox none: host mode, where every command runs in a jail of its own"

// dockerWorkspace is what a run needs of the docker sandbox beyond the
// tools: what it records about the container.
type dockerWorkspace interface {
	sandbox.Workspace
	// Settings is run_start's sandbox object.
	Settings() map[string]any
	// Names are the container's and the worktree volume's names.
	Names() (container, volume string)
	// ImageDigest is the image's registry digest, nil for a local build.
	ImageDigest() *string
}

// dockerBackend is the docker sandbox's entry points; tests substitute
// them to reach the engine's docker paths without a daemon.
type dockerBackend struct {
	preflight func(context.Context, workspace.Config) error
	open      func(context.Context, workspace.Config) (dockerWorkspace, error)
}

// realDocker is the docker sandbox itself, on the daemon the run names
// (cfg.DockerHost), else the environment's.
var realDocker = dockerBackend{
	preflight: func(ctx context.Context, cfg workspace.Config) error {
		return workspace.Preflight(ctx, engineAt(cfg.DockerHost), cfg)
	},
	open: func(ctx context.Context, cfg workspace.Config) (dockerWorkspace, error) {
		ws, err := workspace.Open(ctx, engineAt(cfg.DockerHost), cfg)
		if err != nil {
			return nil, err // never a typed nil inside the interface
		}
		return ws, nil
	},
}

// engineAt connects to the daemon at host ("" the environment's).
func engineAt(host string) func() (daemon.Engine, error) {
	return func() (daemon.Engine, error) { return docker.ConnectEngineTo(host) }
}

func (r *Runner) dockerBackend() dockerBackend {
	if r.docker.preflight == nil || r.docker.open == nil {
		return realDocker
	}
	return r.docker
}

// dockerPreflight is preflight step 6 for --sandbox docker: the parts of
// the workspace's configuration known before the run exists, checked by
// the sandbox (daemon, image, object store). A refusal names what failed
// and how to do without docker.
func (r *Runner) dockerPreflight(ctx context.Context, p *prepared) error {
	cfg := dockerConfig(p.spec, p.repo)
	if err := r.dockerBackend().preflight(ctx, cfg); err != nil {
		return &PreflightError{Msg: err.Error(), Hint: dockerHint(err), Err: err}
	}
	p.docker = cfg
	return nil
}

// dockerConfig is the workspace configuration that spec and the
// repository decide; the run's own names and paths come at open.
func dockerConfig(spec Spec, repo gitops.Repo) workspace.Config {
	d := spec.Docker
	return workspace.Config{
		DockerHost: d.Host, RepoRoot: repo.Root, CommonDir: repo.CommonDir,
		Image: d.Image, AllowNetwork: d.AllowNetwork, Memory: d.Memory, CPUs: d.CPUs, PidsLimit: spec.PidsLimit,
		TmpSize: d.TmpSize, GitdirSize: d.GitdirSize, MinFreeMB: d.MinFreeMB,
		KeepVolume: d.KeepVolume, DetachRemoval: true, MaxPatchMB: d.MaxPatchMB, WithHistory: d.WithHistory, Setup: d.Setup,
		Limits: sandbox.Limits{MaxBytes: int64(spec.MaxWorktreeMB) << 20, MaxEntries: int64(spec.MaxWorktreeFiles)},
		// The sandbox asks once it knows the image's architecture.
		Toolbox: hostToolbox.toolbox,
	}
}

// dockerHint is the fix for a docker preflight refusal.
// dockerHint is the fix a docker refusal names for err: what to start,
// build or free, or how to do without docker.
func dockerHint(err error) string {
	switch {
	case errors.Is(err, docker.ErrDaemonUnreachable), errors.Is(err, docker.ErrTimedOut):
		return "start the Docker daemon (or point DOCKER_HOST at one that runs), or " + hostModeHint
	case errors.Is(err, workspace.ErrImageMissing):
		return "build the worker image with: dirtywork image build (or name another with --image), or " + hostModeHint
	case errors.Is(err, workspace.ErrLowDiskSpace):
		return "free disk space for docker (or lower --min-free-mb), or " + hostModeHint
	case errors.Is(err, workspace.ErrNoToolbox):
		return noToolboxHint(runtime.GOOS, runtime.GOARCH)
	}
	return "fix the docker setup named above, or " + hostModeHint
}

// openDocker starts the run's container and records its names in run.json.
// Its resets and --setup result go to events.
func (r *Runner) openDocker(ctx context.Context, p *prepared, rec *record, slug string, lane gitops.Lane,
	events *sandboxEvents,
) (*opened, error) {
	cfg := p.docker
	cfg.Slug = slug
	cfg.Worktree, cfg.Branch, cfg.BaseCommit = lane.Worktree, lane.Branch, lane.BaseCommit
	cfg.RunDir = rec.dir
	allow, err := egressAllowlist(ctx, p.spec, p.repo.Root, lane.BaseCommit)
	if err != nil {
		return nil, err
	}
	cfg.Allow = allow
	cfg.Resume = p.resume != nil
	cfg.OnReset = events.reset
	cfg.OnSetup = events.setupDone
	cfg.OnBaseline = rec.sealBaseline
	cfg.Trace = r.mark
	ws, err := r.dockerBackend().open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	container, volume := ws.Names()
	digest := ws.ImageDigest()
	if _, err := transcript.Patch(rec.dir, transcript.ContainerFields{
		Container: container, Volume: volume, Image: cfg.Image, ImageDigest: digest, ImagePinned: digest != nil,
	}); err != nil {
		_ = ws.Close()
		return nil, fmt.Errorf("record the container in run.json: %w", err)
	}
	return &opened{ws: ws, settings: ws.Settings(), docker: ws, volume: volume}, nil
}

// WarmDocker makes the docker engine spec names (spec.Docker.Host) ready
// for runs of spec's image: its tool server volume is filled now if a run
// would have to (workspace.WarmToolbox).
func WarmDocker(ctx context.Context, spec Spec) error {
	cfg := dockerConfig(spec, gitops.Repo{})
	return workspace.WarmToolbox(ctx, engineAt(cfg.DockerHost), cfg)
}
