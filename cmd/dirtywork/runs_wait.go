package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/dirtywork/dirtywork/engine"
	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/transcript/termsafe"
)

// ExitWaitTimeout is `runs wait`'s exit code when the run was still alive
// at --timeout: the code GNU timeout uses, so a shell tells it apart from
// a run that ended (0, 1) and from a refusal (2).
const ExitWaitTimeout = 124

func newRunsWaitCmd(io *streams) *cobra.Command {
	var timeout float64
	cmd := &cobra.Command{
		Use:   "wait SLUG [--timeout S]",
		Short: "Wait for a run to end and print its result",
		Long: `Blocks until the run SLUG is no longer alive, then prints the JSON object
its 'dirtywork run' printed (kept in <run_dir>/result.json) and exits as that
run did: 0 when it completed, 1 for any other status.

A run whose process died without a result (killed, or a crash) prints
{"slug", "status" (run.json's), "alive": false, "run_dir", "transcript",
"worktree", "branch", "error"} instead, exit 1 (0 if run.json says completed).

Exit 124 when the run is still alive after --timeout seconds (nothing on
stdout); exit 2 for an invalid or unknown slug, or a run dir removed while
waiting.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if c.Flags().Changed("timeout") && (timeout < 0 || math.IsNaN(timeout) || math.IsInf(timeout, 0)) {
				return usageErrorf("--timeout must be a number of seconds, at least 0")
			}
			return waitForRun(c.Context(), io, args[0], timeout, c.Flags().Changed("timeout"))
		},
	}
	cmd.Flags().Float64Var(&timeout, "timeout", 0, "give up after this many seconds (exit 124); 0 only looks")
	return cmd
}

// waitForRun is `runs wait`.
func waitForRun(ctx context.Context, io *streams, slug string, timeout float64, bounded bool) error {
	if err := transcript.ValidSlug(slug); err != nil {
		return withHint(err, "see 'dirtywork runs list'")
	}
	store, err := runs.OpenDefault()
	if err != nil {
		return usageErrorf("%v", err)
	}
	run, err := store.Find(slug)
	var refusal *runs.Refusal
	if errors.As(err, &refusal) {
		return withHint(errors.New(refusal.Msg), refusal.Hint)
	} else if err != nil {
		return usageErrorf("%v", err)
	}
	dir := run.Dir
	wctx := ctx
	if bounded {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, time.Duration(timeout*float64(time.Second)))
		defer cancel()
	}
	switch err := engine.WaitRun(wctx, dir); {
	case errors.Is(err, context.DeadlineExceeded):
		return &exitError{Code: ExitWaitTimeout, Err: fmt.Errorf("run '%s' is still running after %gs", slug, timeout)}
	case ctx.Err() != nil:
		return usageErrorf("interrupted while waiting for run '%s'", slug)
	case errors.Is(err, fs.ErrNotExist):
		return usageErrorf("run '%s' was removed while waiting for it", slug)
	case err != nil:
		return usageErrorf("%v", err)
	}
	data, err := engine.ReadResult(dir)
	if err == nil {
		var res struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(data, &res) // ReadResult checked it is an object
		// The run printed it escaped, but the file may come from an
		// older dirtywork that wrote the worker's text raw.
		if _, err := io.out.Write(termsafe.EscapeJSON(data)); err != nil {
			return fmt.Errorf("print the result: %w", err)
		}
		return exitForStatus(res.Status)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(io.errOut, "warning: %v\n", err)
	}
	// No result: the process ended without one. Say what the record
	// says.
	obj := deadRunObject(dir, slug)
	if err := writeJSON(io.out, obj); err != nil {
		return err
	}
	status, _ := obj["status"].(string)
	return exitForStatus(status)
}

// deadRunObject describes an ended run that kept no result, from its
// run.json.
func deadRunObject(dir, slug string) map[string]any {
	obj := map[string]any{
		"slug": slug, "status": nil, "alive": false, "run_dir": dir, "transcript": nil,
		"worktree": nil, "branch": nil,
	}
	if _, err := os.Lstat(filepath.Join(dir, transcript.TranscriptName)); err == nil {
		obj["transcript"] = filepath.Join(dir, transcript.TranscriptName)
	}
	rf, err := transcript.ReadRun(dir)
	if err != nil {
		obj["error"] = "the run ended without a result, and its run.json cannot be read: " + err.Error()
		return obj
	}
	for k, v := range map[string]string{"status": string(rf.Record.Status), "worktree": rf.Record.Worktree, "branch": rf.Record.Branch} {
		if v != "" {
			obj[k] = v
		}
	}
	if obj["status"] == "running" {
		obj["error"] = "the run's process ended without a result (it was killed or crashed); status is run.json's"
	} else {
		obj["error"] = "the run kept no result (it ended before results were kept, or could not write one); status is run.json's"
	}
	return obj
}

// exitForStatus is run's exit code for a final status.
func exitForStatus(status string) error {
	if transcript.Status(status) == transcript.StatusCompleted {
		return nil
	}
	return silentExit(ExitRunNotCompleted)
}
