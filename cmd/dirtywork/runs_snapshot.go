package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newRunsSnapshotCmd(io *streams) *cobra.Command {
	var asJSON bool
	return withJSONFlag(&asJSON, &cobra.Command{
		Use:   "snapshot SLUG [--json]",
		Short: "Commit a run's worktree onto its branch",
		Long: `Commits everything in the run's worktree (tracked changes and untracked files,
ignored ones excepted) onto the run's branch, with plumbing on a temporary index,
config-neutral: no hook or filter runs and the worker's index and git metadata are
never read. Refused (exit 2): a run still in progress, a worktree that is missing
or not a linked worktree of the run's repository, a pre-resume stash beside it, a
branch that is gone, and a worktree with no files over a branch that has some (an
unexported docker run: that would commit the deletion of every file). Prints
'snapshot <sha> on <branch>' or 'nothing to snapshot'. Exit 0.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			store, err := openStore()
			if err != nil {
				return runsError(err)
			}
			res, err := store.Snapshot(c.Context(), args[0])
			if err != nil {
				return runsError(err)
			}
			if asJSON {
				return writeJSON(io.out, res)
			}
			if !res.Changed {
				fmt.Fprintln(io.out, "nothing to snapshot")
				return nil
			}
			line := fmt.Sprintf("snapshot %s on %s", res.Commit, safeLine(res.Branch))
			switch n := len(res.Skipped); {
			case n == 1:
				line += " (1 non-regular entry skipped)"
			case n > 1:
				line += fmt.Sprintf(" (%d non-regular entries skipped)", n)
			}
			fmt.Fprintln(io.out, line)
			return nil
		},
	})
}

func withJSONFlag(asJSON *bool, cmd *cobra.Command) *cobra.Command {
	cmd.Flags().BoolVar(asJSON, "json", false, "print the result as JSON")
	return cmd
}
