package host

import (
	"context"
	"io"

	"github.com/dirtywork/dirtywork/sandbox/host/jail"
)

// realJailer starts the run's jail (package jail).
type realJailer struct {
	// report is what the probe found, for Info.
	report jail.Report
	// allowUnconfined lets layers that cannot be set up be left off.
	allowUnconfined bool
}

// Layers are the probe's layers: what the jail will be.
func (j realJailer) Layers() map[string]any {
	m := map[string]any{"jail": "namespaces"}
	for _, l := range j.report.Layers {
		state := map[string]any{"ok": l.OK}
		if l.Detail != "" {
			state["detail"] = l.Detail
		}
		if l.Problem != "" {
			state["problem"] = l.Problem
		}
		m[l.Name] = state
	}
	return m
}

func (j realJailer) Start(ctx context.Context, spec jailSpec) (jailProc, error) {
	cfg := jail.Config{
		Path: spec.Argv[0], Args: spec.Argv, Env: spec.Env, Dir: spec.Worktree,
		TmpSize: spec.TmpBytes, AllowNetwork: spec.Network, PidsLimit: spec.PidsLimit,
		MemoryBytes: spec.MemoryBytes, CPUs: spec.CPUs, AllowUnconfined: j.allowUnconfined,
		Mounts: []jail.Mount{{Source: spec.Worktree, Target: spec.Worktree}},
	}
	for _, b := range spec.Binds {
		switch {
		case b.Over != "":
			cfg.Mounts = append(cfg.Mounts, jail.Mount{Source: b.Over, Target: b.Path, ReadOnly: true})
		case b.Writable:
			cfg.Mounts = append(cfg.Mounts, jail.Mount{Source: b.Path, Target: b.Path})
		default:
			cfg.Mounts = append(cfg.Mounts, jail.Mount{Source: b.Path, Target: b.Path, ReadOnly: true})
		}
	}
	cfg.ReadOnlyPaths, cfg.UnmappedPaths, cfg.Hidden = spec.ReadOnly, spec.Unmapped, spec.Hidden
	jl, err := jail.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// The server's stderr is diagnostics only; it must be read, or a
	// server blocked on it would stop answering.
	go func() { _, _ = io.Copy(io.Discard, jl.Stderr) }()
	return realProc{jl}, nil
}

// realProc is a running jail.
type realProc struct{ j *jail.Jail }

func (p realProc) Stdin() io.WriteCloser { return p.j.Stdin }
func (p realProc) Stdout() io.ReadCloser { return p.j.Stdout }
func (p realProc) Kill() error           { return p.j.Kill() }
func (p realProc) Wait() error           { return p.j.Wait() }
func (p realProc) Info() any             { return p.j.Info() }
