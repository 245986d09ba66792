package workspace

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/egress"
)

// Defaults of the limits a Config may leave zero (the contract's
// S-1).
const (
	defaultMemory     = "4g"
	defaultCPUs       = 2.0
	defaultTmpSize    = "1g"
	defaultGitdirSize = "512m"
	defaultPidsLimit  = 512
	// homeSize has no flag.
	homeSize = "256m"
)

// pathEnvValue is PATH_ENV (C-4) without its name.
const pathEnvValue = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// errBadLimit is a size or CPU count docker would refuse.
var errBadLimit = errors.New("invalid container limit")

// limits are a workspace's container limits, parsed once. The strings are
// as given (run_start records them); the kernel's tmpfs and the daemon get
// the bytes, which they read whatever form the size was given in.
type limits struct {
	Memory, TmpSize, GitdirSize        string
	MemoryBytes, TmpBytes, GitdirBytes int64
	CPUs                               float64
	PidsLimit                          int64
}

// limitsOf checks and defaults cfg's container limits.
func limitsOf(cfg Config) (limits, error) {
	l := limits{Memory: cfg.Memory, TmpSize: cfg.TmpSize, GitdirSize: cfg.GitdirSize, CPUs: cfg.CPUs, PidsLimit: int64(cfg.PidsLimit)}
	switch {
	case l.PidsLimit == 0:
		l.PidsLimit = defaultPidsLimit
	case l.PidsLimit < 0:
		return limits{}, fmt.Errorf("%w: pids limit %d", errBadLimit, l.PidsLimit)
	}
	if l.Memory == "" {
		l.Memory = defaultMemory
	}
	if l.TmpSize == "" {
		l.TmpSize = defaultTmpSize
	}
	if l.GitdirSize == "" {
		l.GitdirSize = defaultGitdirSize
	}
	if l.CPUs == 0 {
		l.CPUs = defaultCPUs
	}
	if l.CPUs < 0.01 {
		return limits{}, fmt.Errorf("%w: cpus %v", errBadLimit, l.CPUs)
	}
	for _, s := range []struct {
		name, v string
		n       *int64
	}{{"memory", l.Memory, &l.MemoryBytes}, {"tmp size", l.TmpSize, &l.TmpBytes}, {"gitdir size", l.GitdirSize, &l.GitdirBytes}} {
		n, err := sandbox.ParseSize(s.v)
		if err != nil {
			return limits{}, fmt.Errorf("%w: %s %q (want a size such as 512m or 4g)", errBadLimit, s.name, s.v)
		}
		*s.n = n
	}
	return l, nil
}

// sidecar is what one of a run's helper containers (the measurer, the
// egress proxy) is made of: the tool server's entrypoint with cmd, as
// user, on network, within memory and pids, with mounts. Everything else
// is the same for all of them: a read-only root, no capabilities, no new
// privileges, no init (the tool server reaps), one CPU, and the standard
// streams attached.
type sidecar struct {
	imageID, user, network string
	cmd                    []string
	labels                 map[string]string
	memory, pids           int64
	mounts                 []daemon.Mount
}

// spec is the sidecar's container.
func (sc sidecar) spec() daemon.ContainerSpec {
	return daemon.ContainerSpec{
		Image:        sc.imageID,
		User:         sc.user,
		Env:          []string{"PATH=" + pathEnvValue, "LANG=C.UTF-8"},
		Entrypoint:   []string{toolboxPath},
		Cmd:          sc.cmd,
		Labels:       sc.labels,
		Stdin:        true,
		Output:       true,
		Network:      sc.network,
		ReadOnlyRoot: true,
		CapDrop:      []string{"ALL"},
		SecurityOpt:  []string{"no-new-privileges"},
		Init:         false,
		Memory:       sc.memory,
		NanoCPUs:     1e9,
		PidsLimit:    sc.pids,
		Mounts:       sc.mounts,
	}
}

// workerEnv is the environment of the worker container, and so of the
// tool server and every command it runs: nothing is inherited from the
// image (C-4).
func workerEnv() []string {
	return []string{
		"PATH=" + pathEnvValue,
		"GIT_DIR=" + gitDir,
		"GIT_WORK_TREE=" + workDir,
		"HOME=" + homeDir,
		"TMPDIR=/tmp",
		"LANG=C.UTF-8",
		"GIT_AUTHOR_NAME=dirtywork",
		"GIT_AUTHOR_EMAIL=dirtywork@localhost",
		"GIT_COMMITTER_NAME=dirtywork",
		"GIT_COMMITTER_EMAIL=dirtywork@localhost",
	}
}

// userSpec is the container's --user.
func userSpec() string {
	return strconv.Itoa(workerUID) + ":" + strconv.Itoa(workerGID)
}

// tmpfsOpts are the options of a tmpfs owned by the worker with mode 0700.
func tmpfsOpts(size string) string {
	return fmt.Sprintf("rw,size=%s,mode=0700,uid=%d,gid=%d", size, workerUID, workerGID)
}

// workerSpec is the worker container (S-14, without its bind mount and
// its cat): the tool server is pid 1 itself, with no docker-init (Init
// false), so no process in the container but the server holds the
// attached stream, and the server, non-dumpable from its first
// instruction, reaps and forwards signals as init would
// (toolbox.Main). Its stdin is held open by our attach so that the
// container ends when this process does (OpenStdin with StdinOnce: when
// the attached stream closes, stdin closes and the server ends, and with
// pid 1 the whole container). Nothing is bind-mounted: the tree and the
// tools are volumes, everything else tmpfs.
//
// The container never has a network: with allowNetwork the tool server
// forwards 127.0.0.1:3128 to the egress proxy's socket in the tools volume
// (egress.go), and the proxy variables point every command there.
func workerSpec(n objectNames, imageID string, labels map[string]string, l limits, allowNetwork bool) daemon.ContainerSpec {
	s := daemon.ContainerSpec{
		Image:      imageID,
		User:       userSpec(),
		Env:        workerEnv(),
		Entrypoint: []string{toolboxPath},
		Cmd:        []string{"toolbox", "-root", workDir, "-cgroup-oom"},
		Labels:     labels,
		Stdin:      true,
		Output:     true,
		// No working directory (S-15): the server runs commands in /work
		// itself.
		Network:      "none",
		ReadOnlyRoot: true,
		CapDrop:      []string{"ALL"},
		SecurityOpt:  []string{"no-new-privileges"},
		Init:         false,
		Memory:       l.MemoryBytes,
		NanoCPUs:     int64(l.CPUs * 1e9),
		PidsLimit:    l.PidsLimit,
		Tmpfs: map[string]string{
			"/tmp":  "rw,exec,size=" + strconv.FormatInt(l.TmpBytes, 10) + ",mode=1777",
			gitDir:  tmpfsOpts(strconv.FormatInt(l.GitdirBytes, 10)),
			homeDir: tmpfsOpts(homeSize),
		},
		Mounts: []daemon.Mount{
			{Volume: n.WorkVolume, Target: workDir},
			// Writable only so that the daemon can upload into it; its
			// files and directories are root's and read-only, and the
			// worker has no capability to override that.
			{Volume: n.ToolsVolume, Target: toolsDir},
			n.Toolbox.mount(),
		},
	}
	if allowNetwork {
		s.Cmd = append(s.Cmd, egressArgs()...)
		s.Env = append(s.Env, egress.Env(egress.ListenAddr)...)
	}
	return s
}

// setupSpec is the --setup container: the worker's limits and lockdown,
// running command in /work with bash, and no tool server. It sees the
// tree but not the worker's git dir. Its network is the egress proxy's
// and nothing else: no network of its own, the command run under
// `dirtywork __egress run`, which forwards 127.0.0.1:3128 to the proxy's
// socket, and the proxy variables set.
func setupSpec(n objectNames, imageID string, labels map[string]string, l limits, command string) daemon.ContainerSpec {
	s := workerSpec(n, imageID, labels, l, false)
	s.Entrypoint = []string{
		toolboxPath, "__egress", "run", "-socket", egressSocket, "-listen", egress.ListenAddr, "--",
		"/bin/bash", "-c", `cd /work && exec /bin/bash -c "$1"`, "bash", command,
	}
	s.Cmd = nil
	s.Stdin = false
	// No stream to guard here, and bash is no init: docker's reaps.
	s.Init = true
	env := make([]string, 0, len(s.Env))
	for _, kv := range s.Env {
		// The git dir is the worker container's tmpfs; setup has none.
		if !strings.HasPrefix(kv, "GIT_DIR=") && !strings.HasPrefix(kv, "GIT_WORK_TREE=") {
			env = append(env, kv)
		}
	}
	s.Env = append(env, egress.Env(egress.ListenAddr)...)
	// The tree, and the tools read-only: the forwarder's binary and the
	// proxy's socket.
	s.Mounts = []daemon.Mount{
		s.Mounts[0], {Volume: n.ToolsVolume, Target: toolsDir, ReadOnly: true}, n.Toolbox.mount(),
	}
	return s
}
