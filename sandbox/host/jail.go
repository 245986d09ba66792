package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dirtywork/dirtywork/sandbox/egress"
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
	// Network is "none" (a loopback of the jail's own), "proxy" (that
	// loopback and the egress proxy: --allow-network) or "host" (no jail:
	// the operator's network, unconfined).
	Network string `json:"network"`
	// Egress is the proxy's allowlist and log, with Network "proxy".
	Egress    *EgressInfo `json:"egress,omitempty"`
	PidsLimit int         `json:"pids_limit"`
	Memory    int64       `json:"memory"`
	TmpSize   int64       `json:"tmp_size"`
	// CPUs is the jail's CPU cap, in CPUs (--cpus); layers.cpu_limit says
	// how it is enforced, or that it cannot be and the jail runs at a
	// lower priority instead.
	CPUs float64 `json:"cpus"`
	// Nofile is RLIMIT_NOFILE (soft and hard) of every process in the
	// jail, Ptys the most pseudo-terminals it holds: its shares of the
	// host's open files and pty tables.
	Nofile           int   `json:"nofile"`
	Ptys             int   `json:"ptys"`
	GitdirSize       int64 `json:"gitdir_size"`
	MaxWorktreeMB    int64 `json:"max_worktree_mb"`
	MaxWorktreeFiles int64 `json:"max_worktree_files"`
	WithHistory      bool  `json:"with_history"`
	// PrivateGit is set: the worker's git works on a repository of its
	// own, never the host's.
	PrivateGit bool `json:"private_git"`
	// Toolchains are the toolchain roots bash is told about and, for
	// each, what the jail shows of it and what it withholds.
	Toolchains []Toolchain `json:"toolchains,omitempty"`
	// ToolchainPrivate says how files only their owner may read stay
	// closed inside what is shown: "unreadable" (the kernel refuses them:
	// a root operator's worker is not their owner), "covered_two_levels"
	// (a non-root operator's worker is: those found within two levels of
	// each exposed path are covered) or "readable" (no jail).
	ToolchainPrivate string `json:"toolchain_private,omitempty"`
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
			r := ProbeJail(ctx, "") // Seatbelt's on macOS
			report = &r
		}
		err := report.Err()
		var ue *jail.UnavailableError
		switch {
		case err == nil:
			j = jailerFor(*report)
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
	_, plain := j.(childJailer)
	env := w.operatorEnvMap()
	w.toolchains = planToolchains(env, operatorHome(w.cfg.Home, env), !plain, kernelHidesPrivate(j))
	network := "none"
	var egressInfo *EgressInfo
	switch {
	case w.egressOn():
		network = "proxy"
		egressInfo = &EgressInfo{Allowlist: w.cfg.Allow.Strings(), Log: filepath.Join(w.cfg.RunDir, egress.LogName)}
	case w.cfg.Network:
		network = "host"
	}
	pids := orDefault(w.cfg.PidsLimit, jail.DefaultPidsLimit)
	w.info = Info{
		Backend: "host", Layers: layersOf(j), Network: network, Egress: egressInfo,
		// What the jail holds to: its defaults where the config gives none.
		PidsLimit:     pids,
		Memory:        orDefault(w.cfg.MemoryBytes, jail.DefaultMemory),
		TmpSize:       orDefault(w.cfg.TmpBytes, jail.DefaultTmpSize),
		CPUs:          orDefault(w.cfg.CPUs, jail.DefaultCPUs),
		Nofile:        jail.NofileLimit(pids),
		Ptys:          jail.MaxPtys,
		GitdirSize:    w.gitDirLimits().MaxBytes,
		MaxWorktreeMB: w.cfg.Limits.MaxBytes >> 20, MaxWorktreeFiles: w.cfg.Limits.MaxEntries,
		WithHistory: w.cfg.WithHistory, PrivateGit: true, Warning: warning,
		Toolchains: w.toolchains.roots, ToolchainPrivate: w.toolchains.private,
	}
	if _, sb := j.(seatbeltJailer); sb {
		// Seatbelt caps nothing of the kind and has no /tmp of its own:
		// Info claims no limit it does not hold.
		w.info.PidsLimit, w.info.Memory, w.info.TmpSize, w.info.CPUs, w.info.Nofile, w.info.Ptys = 0, 0, 0, 0, 0, 0
	}
	return nil
}

// kernelHidesPrivate reports whether the jail j starts keeps the
// operator's private files from the worker by itself: a root operator's
// worker is a uid of its own on the host, unless idmapped mounts cannot be
// had and it runs as the host's uid 0 instead (DIRTYWORK_ALLOW_UNCONFINED).
func kernelHidesPrivate(j jailer) bool {
	rj, ok := j.(realJailer)
	if !ok || os.Geteuid() != 0 {
		return false
	}
	l, ok := rj.report.Layer(jail.LayerIDMap)
	return ok && l.OK
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
	scratch := ""
	if hostView(w.jailer) {
		// No mount namespace shows the gitfile over .git, and /tmp is the
		// host's: the worker's git is pointed at its repository by the
		// environment instead, and TMPDIR at a directory of the run.
		benv = append(benv, "GIT_DIR="+w.private.gitDir, "GIT_WORK_TREE="+w.worktree, "TMPDIR="+w.private.tmp)
		scratch = w.private.tmp
	}
	spec := jailSpec{
		Argv: []string{exe, toolboxArg, "-root", w.worktree, "-display", w.worktree, "-bash", bash},
		Env:  benv, Worktree: w.worktree, Home: home, Scratch: scratch,
		PidsLimit: w.cfg.PidsLimit, MemoryBytes: w.cfg.MemoryBytes, TmpBytes: w.cfg.TmpBytes,
		CPUs: w.cfg.CPUs,
		Binds: []bind{
			{Path: exe},
			{Path: filepath.Dir(w.private.objects)},
			{Path: w.private.gitDir, Writable: true},
			{Path: filepath.Join(w.worktree, ".git"), Over: w.private.gitfile},
		},
	}
	switch {
	case w.egress != nil && w.egress.port != 0:
		// Seatbelt: the commands share the host's network stack, which
		// the profile closes but for the proxy's port on loopback.
		spec.Env = append(spec.Env, egress.Env(w.egress.addr)...)
		spec.ProxyPort = w.egress.port
	case w.egress != nil:
		// The jail keeps its own network namespace: its way out is the
		// proxy's socket, forwarded to by the tool server.
		spec.Argv = append(spec.Argv, egressArgs()...)
		spec.Env = append(spec.Env, egress.Env(egress.ListenAddr)...)
		spec.Binds = append(spec.Binds, bind{Path: jailEgressDir, Over: w.egress.dir})
	case w.cfg.Network:
		spec.Network = true // no jail: the host's network, as everything else
	}
	spec.Unmapped, spec.Hidden = w.toolchains.exposed, w.toolchains.hidden
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
func orDefault[T int | int64 | float64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
