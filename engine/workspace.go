package engine

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/dirtywork/dirtywork/engine/policy"
	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/host"
	"github.com/dirtywork/dirtywork/transcript"
)

// opened is the workspace a run works in, with what the run records and
// enforces around it.
type opened struct {
	ws sandbox.Workspace
	// settings is run_start's sandbox object.
	settings any
	// docker is the docker workspace, nil in host mode.
	docker dockerWorkspace
	// volume is the docker worktree volume's name, "" in host mode.
	volume string
}

// guard is the bash deny-list's configuration: in a container the
// host-only rules do not apply and no host path needs rewriting.
func (o *opened) guard(lane gitops.Lane) policy.Options {
	if o.docker != nil {
		return policy.Options{Mode: policy.Docker}
	}
	// The worker's git works on its private repository: only the accident
	// guards about paths outside the worktree apply.
	return policy.Options{Mode: policy.Host, Worktrees: worktreeForms(lane.Worktree), PrivateGit: true}
}

// openWorkspace opens the run's sandbox. A *PreflightError refuses the
// run (exit 2, the caller removes what it created); any other error is a
// setup failure.
func (r *Runner) openWorkspace(ctx context.Context, p *prepared, rec *record, slug string, lane gitops.Lane,
	events *sandboxEvents,
) (*opened, error) {
	if p.spec.Sandbox == "docker" {
		return r.openDocker(ctx, p, rec, slug, lane, events)
	}
	spec := p.spec
	allow, err := egressAllowlist(ctx, spec, p.repo.Root, lane.BaseCommit)
	if err != nil {
		return nil, err
	}
	ws, err := host.Open(ctx, host.Config{
		Worktree: lane.Worktree, RepoRoot: p.repo.Root, CommonDir: p.repo.CommonDir, AdminDir: lane.GitDir,
		Branch: lane.Branch, BaseCommit: lane.BaseCommit, RunDir: rec.dir,
		WithHistory: spec.Docker.WithHistory, KeepTree: spec.ResumedFrom != nil, AllowCommit: spec.AllowCommit,
		Limits:     sandbox.Limits{MaxBytes: int64(spec.MaxWorktreeMB) << 20, MaxEntries: int64(spec.MaxWorktreeFiles)},
		MaxPatchMB: spec.Docker.MaxPatchMB,
		Network:    spec.Docker.AllowNetwork, Allow: allow, PidsLimit: spec.PidsLimit,
		MemoryBytes: p.hostMemory, TmpBytes: p.hostTmp, GitDirBytes: p.hostGitdir, CPUs: spec.Docker.CPUs,
		AllowUnconfined: r.getenv(AllowUnconfinedEnv) == "1",
		Probe:           p.jailProbe,
		Trace:           r.mark,
		OnJailStarted: func(info any) {
			// What the jail set up, beside the probe's view in run_start.
			_, _ = transcript.Patch(rec.dir, transcript.JailFields{Jail: info})
		},
		UserSiteCache: p.userSiteCache,
		OnBaseline:    rec.sealBaseline,
	})
	if err != nil {
		if errors.Is(err, host.ErrNoJail) {
			return nil, refuse(hostJailHint, "%v", err)
		}
		return nil, err
	}
	info := ws.Info()
	if info.Warning != "" {
		r.warnf("%s", info.Warning)
	}
	return &opened{ws: ws, settings: info}, nil
}

// hostJailHint is the fix for a host jail that cannot be set up: each
// missing layer's own fix is in the message.
const hostJailHint = "fix what is named above, or set " + AllowUnconfinedEnv + "=1 to run host mode without the missing layers (run_start.sandbox then says which)"

// worktreeForms is the worktree as given and as resolved, for the
// deny-list's path rewrite.
func worktreeForms(wt string) []string {
	forms := []string{wt}
	if resolved, err := filepath.EvalSymlinks(wt); err == nil && resolved != wt {
		forms = append(forms, resolved)
	}
	return forms
}
