package main

import (
	"fmt"

	"github.com/spf13/cobra"

	workerimage "github.com/dirtywork/dirtywork/docker"
	"github.com/dirtywork/dirtywork/engine/runs"
)

func newRunsCleanCmd(io *streams) *cobra.Command {
	var (
		all    bool
		opts   runs.CleanOptions
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "clean SLUG|--all [--force] [--keep-transcript] [--dry-run]",
		Short: "Remove what finished runs left, never losing unmerged work",
		Long: `Removes a finished run's container and volumes (only when their labels name
the run), its worktree and branch (only a clean dw-* worktree of the run's
repository with no commits beyond its base, unless --force), the pre-resume
stashes beside that worktree (only when the worktree goes) and its run dir
(--keep-transcript keeps run.json and transcript.jsonl). Prints one
'<action>: <detail>' line per step.

Nothing unmerged is deleted: a kept volume whose tree never reached the worktree
is exported into it first; with --force, a worktree with changes, a branch
with commits beyond its base or a pre-resume stash holding work is first
parked under refs/dirtywork/parked/<slug>, and the line says how to get it
back. A run still running is never touched; a
crashed one needs --force. Cleaning twice is fine: with --force, a run an
earlier clean removed is reported gone (absent-rundir) and is no skip; a slug
that never was a run is. --dry-run says what would be done. Exit 1 when any step was skipped, else 0; 2 for bad arguments.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			switch {
			case !all && len(args) == 0:
				return usageErrorf("'runs clean' needs a slug or --all")
			case all && len(args) == 1:
				return usageErrorf("'runs clean' takes a slug or --all, not both")
			}
			store, err := runs.OpenDefault(runs.WithDefaultImage(workerimage.DefaultImage(Version())))
			if err != nil {
				return runsError(err)
			}
			var results []*runs.CleanResult
			if all {
				if results, err = store.CleanAll(c.Context(), opts); err != nil {
					return runsError(err)
				}
			} else {
				results = []*runs.CleanResult{store.Clean(c.Context(), args[0], opts)}
			}
			skipped := false
			line := safeLine
			for _, r := range results {
				skipped = skipped || r.Skipped()
				if asJSON {
					continue
				}
				for _, a := range r.Actions {
					fmt.Fprintf(io.out, "%s: %s\n", a.Action, line(a.Detail))
				}
			}
			if asJSON {
				if err := writeJSON(io.out, results); err != nil {
					return err
				}
			}
			if skipped {
				return silentExit(ExitRunNotCompleted)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&all, "all", false, "clean every run")
	f.BoolVar(&opts.Force, "force", false, "also remove dirty worktrees, branches with commits and crashed runs (their work parked first)")
	f.BoolVar(&opts.KeepTranscript, "keep-transcript", false, "keep run.json and transcript.jsonl")
	f.BoolVar(&opts.DryRun, "dry-run", false, "say what would be done; do nothing")
	f.BoolVar(&asJSON, "json", false, "print the actions as JSON")
	return cmd
}
