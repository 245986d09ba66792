package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/dirtywork/dirtywork/transcript/termsafe"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

// Version reports the build's version: the one stamped at build time, else
// "dev" plus the VCS revision the toolchain recorded, if any.
func Version() string { return versionOf(version) }

// versionOf is Version for a stamp (tests give theirs without writing
// the package's, which parallel tests read).
func versionOf(stamp string) string {
	if stamp != "" {
		return stamp
	}
	v := "dev"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += "-" + rev + modified
	}
	return v
}

// streams are the standard streams a command writes to; tests pass buffers.
type streams struct {
	in          io.Reader
	out, errOut io.Writer
	// args are the command line without the program name, for commands
	// that start themselves again (run --detach).
	args []string
}

// Main runs dirtywork with args (without the program name) and returns the
// process exit code. It is what main calls and what tests call.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// The first signal cancels gracefully (a run still prints its result);
	// once it has, the default disposition returns, so a second one kills.
	go func() {
		<-ctx.Done()
		stop()
	}()

	// Errors, warnings and progress lines quote paths and text the worker
	// chose (file names, git's messages about them): neutralised wherever
	// stderr goes, as a log or a pipe is read on a terminal later.
	safeErr := termsafe.NewWriter(stderr)
	defer func() { _ = safeErr.Flush() }() // nowhere left to report a failure to
	stderr = safeErr
	io := &streams{in: stdin, out: stdout, errOut: stderr, args: args}
	root := newRootCmd(io)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	code, msg, hint := exitCode(err)
	if msg != "" {
		fmt.Fprintf(stderr, "error: %s\n", msg)
	}
	if hint != "" {
		fmt.Fprintln(stderr, hint)
	}
	return code
}

func newRootCmd(io *streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "dirtywork",
		Short: "Hand coding tasks to local language models and review what comes back",
		Long: `dirtywork runs one coding task against a local OpenAI-compatible model server
in an agentic tool loop, inside an isolated git worktree, and reports the
result as one JSON object. Mission control (dirtywork tui) supervises up to
four runs at once and takes review verdicts.`,
		Version:       Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(io.in)
	root.SetOut(io.out)
	root.SetErr(io.errOut)
	root.SetVersionTemplate("dirtywork {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{Code: ExitUsage, Err: err, Hint: fmt.Sprintf("see '%s --help'", c.CommandPath())}
	})

	root.AddCommand(
		newRunCmd(io),
		newResumeCmd(io),
		newRunsCmd(io),
		newBenchCmd(io),
		newTUICmd(io),
		newServeCmd(io),
		newDemoCmd(io),
		newImageCmd(io),
		newLaneCmd(io),
		newDoctorCmd(io),
		newDevCmd(io),
		newToolboxCmd(io),
		newEgressCmd(io),
		newVersionCmd(io),
	)
	return root
}
