package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// CommandFunc builds the process for one git invocation. exec.CommandContext
// is the default; tests substitute one that records the argv or wraps git.
type CommandFunc func(ctx context.Context, name string, args ...string) *exec.Cmd

// Git runs the git CLI. The zero value is not usable; use New.
type Git struct {
	// Path is the git executable, looked up in PATH when not absolute.
	Path string
	// Command builds each process; exec.CommandContext by default.
	Command CommandFunc
	// Environ returns the environment git starts from (os.Environ by
	// default); Run strips and adds to it deliberately.
	Environ func() []string
}

// New returns a Git that runs "git" from PATH in the process environment.
func New() *Git {
	return &Git{Path: "git", Command: exec.CommandContext, Environ: os.Environ}
}

// Call is one git invocation.
type Call struct {
	// Dir is passed as -C; it should be absolute.
	Dir string
	// Args are the subcommand and its arguments.
	Args []string
	// Neutral selects config-neutral mode, required whenever git reads
	// content a worker could have written: no global or system config, no
	// hooks, no fsmonitor, no untracked cache, no global attributes or
	// excludes, every filter driver defined in the repository's own config
	// blanked, and --no-ext-diff --no-textconv on diff, log and show.
	Neutral bool
	// GitDir and WorkTree, when set, pin the repository through GIT_DIR and
	// GIT_WORK_TREE instead of letting git discover it from Dir, so a .git
	// file rewritten inside a worktree cannot redirect the command.
	GitDir, WorkTree string
	// IndexFile, when set, points git at another index (GIT_INDEX_FILE),
	// so a commit can be built without touching the worktree's own.
	IndexFile string
	// ObjectDir and AlternateObjectDirs, when set, point git at another
	// object store (GIT_OBJECT_DIRECTORY) borrowing from others
	// (GIT_ALTERNATE_OBJECT_DIRECTORIES): a quarantine where objects from
	// outside are checked before any reaches the repository.
	ObjectDir           string
	AlternateObjectDirs []string
	// Filters, in neutral mode, are overrides from NeutralFilters for the
	// same Dir and pins, so a series of calls shares one lookup; nil
	// means look them up for this call.
	Filters *Filters
}

// Filters blank the filter drivers a repository's own config defines.
type Filters struct{ env []string }

// NeutralFilters looks up the filter overrides neutral mode needs for
// calls like c (same Dir, GitDir and WorkTree), to pass as Call.Filters.
func (g *Git) NeutralFilters(ctx context.Context, c Call) (*Filters, error) {
	env := buildEnv(g.Environ(), true, c.GitDir, c.WorkTree)
	kv, err := g.filterOverrides(ctx, c.Dir, env)
	if err != nil {
		return nil, err
	}
	return &Filters{env: kv}, nil
}

// waitDelay bounds how long a cancelled git may keep its pipes open (for
// example through a child it started) before Run gives up on it.
const waitDelay = 5 * time.Second

// maxStderrRead bounds the stderr buffered from one command.
const maxStderrRead = 64 << 10

// Run runs one git command and returns its stdout. A failure is an *Error
// (exit code and stderr) unless the context ended, in which case the error
// wraps ctx.Err().
func (g *Git) Run(ctx context.Context, c Call) ([]byte, error) {
	p, err := g.prepare(ctx, c)
	if err != nil {
		return nil, err
	}
	return p.output(ctx)
}

// neutralArgs inserts the diff safety flags after the subcommand of diff,
// log and show in neutral mode, so no caller can forget them.
func neutralArgs(neutral bool, args []string) []string {
	if !neutral || len(args) == 0 {
		return args
	}
	switch args[0] {
	case "diff", "log", "show":
		out := make([]string, 0, len(args)+2)
		out = append(out, args[0], "--no-ext-diff", "--no-textconv")
		return append(out, args[1:]...)
	}
	return args
}

// run is Run in plain mode in dir.
func (g *Git) run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return g.Run(ctx, Call{Dir: dir, Args: args})
}

// exec starts git with argv and env and waits for it.
func (g *Git) exec(ctx context.Context, argv, env []string) ([]byte, error) {
	return g.process(ctx, argv, env).output(ctx)
}

// process is one prepared git command.
type process struct {
	cmd    *exec.Cmd
	argv   []string
	sub    string
	stderr *cappedBuffer
}

// prepare builds the process for c (environment, -C, neutral-mode config
// and diff flags) without starting it; stdin and stdout are left to the
// caller.
func (g *Git) prepare(ctx context.Context, c Call) (*process, error) {
	env := buildEnv(g.Environ(), c.Neutral, c.GitDir, c.WorkTree)
	if c.IndexFile != "" {
		env = append(env, "GIT_INDEX_FILE="+c.IndexFile)
	}
	if c.ObjectDir != "" {
		env = append(env, "GIT_OBJECT_DIRECTORY="+c.ObjectDir)
	}
	if len(c.AlternateObjectDirs) > 0 {
		env = append(env, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+strings.Join(c.AlternateObjectDirs, string(os.PathListSeparator)))
	}
	var argv []string
	if c.Dir != "" {
		argv = append(argv, "-C", c.Dir)
	}
	if c.Neutral {
		var filters []string
		if c.Filters != nil {
			filters = c.Filters.env
		} else {
			var err error
			if filters, err = g.filterOverrides(ctx, c.Dir, env); err != nil {
				return nil, err
			}
		}
		env = append(env, filters...)
		for _, kv := range neutralConfig {
			argv = append(argv, "-c", kv)
		}
	}
	argv = append(argv, neutralArgs(c.Neutral, c.Args)...)
	return g.process(ctx, argv, env), nil
}

// process builds git with argv and env, stderr captured, not started.
func (g *Git) process(ctx context.Context, argv, env []string) *process {
	cmd := g.Command(ctx, g.Path, argv...)
	cmd.Env = env
	stderr := &cappedBuffer{max: maxStderrRead}
	cmd.Stderr = stderr
	cmd.WaitDelay = waitDelay
	return &process{cmd: cmd, argv: argv, sub: subcommand(argv), stderr: stderr}
}

// output runs p and returns its stdout, or its failure.
func (p *process) output(ctx context.Context) ([]byte, error) {
	var stdout bytes.Buffer
	p.cmd.Stdout = &stdout
	if err := p.cmd.Run(); err != nil {
		return stdout.Bytes(), p.failure(ctx, err)
	}
	return stdout.Bytes(), nil
}

// failure turns the error of running p into what Run would return: the
// context's error when ctx ended, else an *Error with git's stderr.
func (p *process) failure(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("git %s: %w", p.sub, ctxErr)
	}
	code := -1
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	return &Error{
		Args:       p.argv,
		Subcommand: p.sub,
		ExitCode:   code,
		Stderr:     trimStderr(p.stderr.Bytes()),
		Err:        err,
	}
}

// subcommand finds the git subcommand in an argv that may start with -C and
// -c options.
func subcommand(argv []string) string {
	for i := 0; i < len(argv); i++ {
		switch argv[i] {
		case "-C", "-c":
			i++
		default:
			return argv[i]
		}
	}
	return ""
}

// cappedBuffer keeps the first max bytes written and discards the rest
// while still reporting success, so a chatty command never blocks on its
// stderr.
type cappedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

// Bytes returns what was kept.
func (b *cappedBuffer) Bytes() []byte { return b.buf.Bytes() }
