package confine

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// MaybeRun turns this process into the launcher when it was started as one
// (first argument "__confine"), and then never returns: it replaces itself
// with bash, or exits after reporting why it could not. Otherwise it
// returns at once. Call it first thing in main, and in TestMain of test
// binaries that start confined commands.
func MaybeRun() {
	if len(os.Args) < 2 || os.Args[1] != launcherArg {
		return
	}
	// Straight to exit_group: the launcher has nothing to flush, and the
	// race detector's exit hook would otherwise hold every probe for a
	// second.
	syscall.Exit(launch())
}

// launch sets confinement up and executes bash; it returns only the exit
// status for a failure, which it has reported on the status pipe.
func launch() int {
	// no_new_privs and the Landlock domain belong to the thread that sets
	// them; bash inherits them only if that same thread calls execve.
	runtime.LockOSThread()
	syscall.CloseOnExec(statusFD)
	status := os.NewFile(statusFD, "status")

	p, err := readPolicy()
	if err != nil {
		return report(status, StagePolicy, err)
	}
	if p.Namespace != NoNamespace {
		if err := isolateMounts(p); err != nil {
			return report(status, StageMount, err)
		}
	}
	if p.Namespace != NoNamespace {
		// A fresh tmpfs is bash's own: it may write there. Without a
		// namespace the directory is the host's, and stays read-only.
		for _, dir := range p.Fresh {
			p.Rules = append(p.Rules, Rule{Path: dir, Access: Write})
		}
	}
	if p.ABI > 0 {
		if err := enforce(p); err != nil {
			return report(status, StageLandlock, err)
		}
	}
	if p.Namespace == UserNamespace {
		// The capability was only for mounting; bash gets none.
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
			return report(status, StageMount, fmt.Errorf("drop ambient capabilities: %w", err))
		}
	}
	if p.Probe {
		// Say so positively: a binary that does not call MaybeRun would
		// also close the pipe without a word.
		_, _ = status.Write(readyReport)
		return 0
	}
	err = syscall.Exec(p.Bash, []string{"bash", "-c", p.Command}, os.Environ())
	report(status, StageExec, fmt.Errorf("%s: %w", p.Bash, err))
	return exitExec
}

// readPolicy reads and decodes the policy from its pipe.
func readPolicy() (Policy, error) {
	f := os.NewFile(policyFD, "policy")
	defer func() { _ = f.Close() }() // only read: nothing to lose
	data, err := io.ReadAll(io.LimitReader(f, maxPolicy))
	if err != nil {
		return Policy{}, fmt.Errorf("read policy: %w", err)
	}
	var p Policy
	if err := json.Unmarshal(data, &p); err != nil {
		return Policy{}, fmt.Errorf("decode policy: %w", err)
	}
	return p, nil
}

// report writes a setup failure to the status pipe and returns the
// launcher's exit status for it.
func report(status *os.File, stage string, err error) int {
	data, _ := json.Marshal(SetupError{Stage: stage, Msg: err.Error()})
	_, _ = status.Write(data)
	return exitSetup
}
