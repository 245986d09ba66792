// Package pause stops the process at a named point of its work, so that a
// test can kill it at exactly that moment, without sleeping and hoping.
//
// It is inert unless DIRTYWORK_TEST_PAUSE_AT is set when the process
// starts: At then costs one map lookup in an empty map. When the variable
// names a point (a comma-separated list may name several), the process
// announces on stderr that it reached it, appends the same line to the
// file DIRTYWORK_TEST_PAUSE_FILE names (if set), and blocks the calling
// goroutine until it receives SIGUSR1 (continue) or dies.
//
// The package imports nothing of the project, so every layer can call it.
package pause

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

const (
	// Env names the points to pause at, comma-separated.
	Env = "DIRTYWORK_TEST_PAUSE_AT"
	// FileEnv names a file the announcement is appended to as well.
	FileEnv = "DIRTYWORK_TEST_PAUSE_FILE"
)

// Points a run passes, in order, where a crash must lose nothing. Other
// packages may define their own names; these are the ones the crash tests
// know.
const (
	Lane       = "lane"       // the run's worktree and branch exist
	Transcript = "transcript" // the transcript exists, run_start not yet written
	Volume     = "volume"     // the docker volumes exist, no container yet
	Container  = "container"  // the worker container runs
	Jail       = "jail"       // the host jail runs, the base tree checked out in it
	Reply      = "reply"      // a model reply with tool calls is in the transcript, none run yet
	MidBash    = "mid-bash"   // a worker's bash command is on its way (announced, the process goes on)
	MidWrite   = "mid-write"  // a file was written in the sandbox only
	ToolDone   = "tool-done"  // a tool call did its work, its tool_result not yet written
	Verify     = "verify"     // the worker finished, its verify command not yet run
	Finalize   = "finalize"   // the loop ended, the tree not yet measured or exported
	MidExport  = "mid-export" // part of the tree has reached the worktree
	Stash      = "stash"      // a resume moved the prior work aside, before its export
	RunJSON    = "run-json"   // run_end is written, run.json not yet
	Output     = "output"     // run.json and the kept result are final, stdout not yet written
	Verdict    = "verdict"    // a verdict is being recorded
	Park       = "park"       // a parked ref exists, nothing removed yet
	Merge      = "merge"      // a merge switched the checkout, its branch not yet moved
)

// points is read once: the variable is the test's instruction to the whole
// process, fixed when it starts.
var points = parse(os.Getenv(Env))

func parse(v string) map[string]bool {
	if v == "" {
		return nil
	}
	m := map[string]bool{}
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			m[p] = true
		}
	}
	return m
}

// Armed reports whether name is one of the points asked for, for callers
// that must prepare a point (a stream that pauses part way) beforehand.
func Armed(name string) bool { return points[name] }

// At pauses the calling goroutine if name is one of the points asked for;
// otherwise it returns at once.
func At(name string) {
	if !points[name] {
		return
	}
	hold(name)
}

// hold announces the point and blocks until SIGUSR1 arrives.
func hold(name string) {
	// Listen before announcing, so a test that continues the process as
	// soon as it reads the line cannot lose its signal.
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGUSR1)
	defer signal.Stop(cont)
	line := fmt.Sprintf("dirtywork: paused at %s (pid %d)\n", name, os.Getpid())
	if path := os.Getenv(FileEnv); path != "" {
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
			_, _ = f.WriteString(line) // the stderr line below is the announcement of record
			_ = f.Close()
		}
	}
	_, _ = os.Stderr.WriteString(line) // nowhere to report a failure to
	<-cont
}
