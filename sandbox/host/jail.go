package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dirtywork/dirtywork/sandbox/host/jail"
)

// AllowUnconfinedEnv names the switch that lets host mode run without the
// layers of the jail this system cannot set up.
const AllowUnconfinedEnv = "DIRTYWORK_ALLOW_UNCONFINED"

// Info is run_start's sandbox object in host mode: every layer of the
// jail and its state, and the limits the run holds to.
type Info struct {
	Backend string `json:"backend"`
	// Layers are the jail's layers as it reports them (user namespace,
	// root, network, seccomp, Landlock, limits).
	Layers map[string]any `json:"layers"`
	// Network is "none" (a loopback of the jail's own) or "host".
	Network          string `json:"network"`
	PidsLimit        int    `json:"pids_limit"`
	Memory           int64  `json:"memory"`
	TmpSize          int64  `json:"tmp_size"`
	GitdirSize       int64  `json:"gitdir_size"`
	MaxWorktreeMB    int64  `json:"max_worktree_mb"`
	MaxWorktreeFiles int64  `json:"max_worktree_files"`
	WithHistory      bool   `json:"with_history"`
	// PrivateGit is set: the worker's git works on a repository of its
	// own, never the host's.
	PrivateGit bool `json:"private_git"`
	// Warning says what is missing when the run goes on unconfined
	// (DIRTYWORK_ALLOW_UNCONFINED=1); "" when every layer is in force.
	Warning string `json:"warning,omitempty"`
}

// chooseJail settles the jail the run gets and what Info says of it: the
// jail whole, or, only with AllowUnconfined, the jail without the layers
// this system cannot set up, or no jail at all when its namespaces cannot
// be had. A refusal wraps ErrNoJail and names each missing layer, why and
// the fix.
func (w *Workspace) chooseJail(ctx context.Context) error {
	j := w.cfg.jailer
	warning := ""
	if j == nil {
		report := w.cfg.Probe
		if report == nil {
			r := jail.Probe(ctx)
			report = &r
		}
		err := report.Err()
		var ue *jail.UnavailableError
		switch {
		case err == nil:
			j = realJailer{report: *report}
		case !w.cfg.AllowUnconfined:
			return fmt.Errorf("%w: %w", ErrNoJail, err)
		case errors.As(err, &ue) && !ue.Essential():
			j = realJailer{report: *report, allowUnconfined: true}
			warning = "host mode runs partly unconfined (" + AllowUnconfinedEnv + "=1): " + err.Error()
		default:
			j = childJailer{}
			warning = "host mode runs unconfined (" + AllowUnconfinedEnv + "=1): " + err.Error() +
				"; the tool server and bash run as plain processes of the operator"
		}
	}
	w.jailer = j
	network := "none"
	if w.cfg.Network {
		network = "host"
	}
	w.info = Info{
		Backend: "host", Layers: layersOf(j), Network: network,
		// What the jail holds to: its defaults where the config gives none.
		PidsLimit:     orDefault(w.cfg.PidsLimit, jail.DefaultPidsLimit),
		Memory:        orDefault(w.cfg.MemoryBytes, jail.DefaultMemory),
		TmpSize:       orDefault(w.cfg.TmpBytes, jail.DefaultTmpSize),
		GitdirSize:    w.gitDirLimits().MaxBytes,
		MaxWorktreeMB: w.cfg.Limits.MaxBytes >> 20, MaxWorktreeFiles: w.cfg.Limits.MaxEntries,
		WithHistory: w.cfg.WithHistory, PrivateGit: true, Warning: warning,
	}
	return nil
}

// layersOf is what j says of its layers, or that there is no jail.
func layersOf(j jailer) map[string]any {
	if l, ok := j.(interface{ Layers() map[string]any }); ok {
		return l.Layers()
	}
	return map[string]any{"jail": "none"}
}

// jailSpec is the run's jail: the tool server serving the worktree with
// the E-38 environment, the worker's repository, the toolchains and the
// python user site bound in, and the run's limits.
func (w *Workspace) jailSpec(env map[string]string, home, userSite string) jailSpec {
	exe := w.cfg.Toolbox
	if exe == "" {
		exe, _ = os.Executable()
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	bash := lookPath("bash", env["PATH"])
	if bash == "" {
		bash = "/bin/bash"
	}
	benv := bashEnv(env, home, w.worktree, "/tmp", userSite)
	// The worker's commits carry dirtywork's name, as in docker mode.
	benv = append(benv,
		"GIT_AUTHOR_NAME=dirtywork", "GIT_AUTHOR_EMAIL=dirtywork@localhost",
		"GIT_COMMITTER_NAME=dirtywork", "GIT_COMMITTER_EMAIL=dirtywork@localhost")
	if _, plain := w.jailer.(childJailer); plain {
		// No mount namespace shows the gitfile over .git, and /tmp is the
		// host's: the worker's git is pointed at its repository by the
		// environment instead, and TMPDIR at a directory of the run.
		benv = append(benv, "GIT_DIR="+w.private.gitDir, "GIT_WORK_TREE="+w.worktree, "TMPDIR="+w.private.tmp)
	}
	spec := jailSpec{
		Argv: []string{exe, toolboxArg, "-root", w.worktree, "-display", w.worktree, "-bash", bash},
		Env:  benv, Worktree: w.worktree,
		Network: w.cfg.Network, PidsLimit: w.cfg.PidsLimit, MemoryBytes: w.cfg.MemoryBytes, TmpBytes: w.cfg.TmpBytes,
		Binds: []bind{
			{Path: exe},
			{Path: filepath.Dir(w.private.objects)},
			{Path: w.private.gitDir, Writable: true},
			{Path: filepath.Join(w.worktree, ".git"), Over: w.private.gitfile},
		},
	}
	for _, r := range toolchainRoots(env, home) {
		if p, err := filepath.EvalSymlinks(r[1]); err == nil {
			spec.ReadOnly = append(spec.ReadOnly, p)
		}
	}
	if userSite != "" {
		if p, err := filepath.EvalSymlinks(userSite); err == nil {
			spec.ReadOnly = append(spec.ReadOnly, p)
		}
	}
	return spec
}

// operatorHome is the home the jail does not show, resolved, or "" when
// there is none.
func operatorHome(configured string, env map[string]string) string {
	home := configured
	if home == "" {
		home = env["HOME"]
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home == "" || !filepath.IsAbs(home) {
		return ""
	}
	r, err := filepath.EvalSymlinks(home)
	if err != nil {
		return ""
	}
	return r
}

// toolboxArg, as the first argument, makes dirtywork (or a test binary
// that calls MaybeServe first) the tool server.
const toolboxArg = "__toolbox"

// isToolboxArgs reports whether args (os.Args) start the tool server.
func isToolboxArgs(args []string) bool {
	return len(args) > 1 && strings.EqualFold(args[1], toolboxArg)
}

// orDefault is v, or def when v is zero.
func orDefault[T int | int64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
