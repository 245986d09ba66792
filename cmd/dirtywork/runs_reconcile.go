package main

import (
	"fmt"

	"github.com/spf13/cobra"

	workerimage "github.com/dirtywork/dirtywork/docker"
	"github.com/dirtywork/dirtywork/engine/runs"
)

func newRunsReconcileCmd(io *streams) *cobra.Command {
	var (
		opts   runs.ReconcileOptions
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "reconcile [--dry-run] [--repo R]... [--json]",
		Short: "Find what crashes left behind and clean what is safe",
		Long: `Joins the run records, the lane manifests and 'git worktree list' of the
repositories they name (and every --repo), their .worktrees/ directories, and the
containers and volumes labelled dirtywork.run; lists every orphan with what will
happen to it; then cleans what is safe. A crashed run (recorded as running, its
process gone) is cleaned as 'runs clean --force --keep-transcript' does: its work
parked under refs/dirtywork/parked/<slug>, its record kept. Containers of finished
or unknown runs and tools volumes are removed (labels checked). Work volumes with
no record, lanes other engines opened through 'dirtywork lane', and unknown
worktrees or directories are only reported. A live run is never touched.
--dry-run only lists. Exit 0; 1 when a step failed.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			store, err := runs.OpenDefault(runs.WithDefaultImage(workerimage.DefaultImage(Version())))
			if err != nil {
				return runsError(err)
			}
			rep, err := store.Reconcile(c.Context(), opts)
			if err != nil {
				return runsError(err)
			}
			failed := len(rep.Failed) > 0
			for _, cl := range rep.Cleaned {
				failed = failed || cl.Skipped()
			}
			if asJSON {
				if err := writeJSON(io.out, rep); err != nil {
					return err
				}
			} else {
				line := safeLine
				if len(rep.Orphans) == 0 {
					fmt.Fprintln(io.out, "no orphans found")
				}
				for _, o := range rep.Orphans {
					verb := o.Action
					if rep.DryRun && verb != "report" {
						verb = "would " + verb
					}
					fmt.Fprintf(io.out, "%s %s: %s (%s)\n", o.Kind, line(o.Name), verb, line(o.Detail))
				}
				for _, cl := range rep.Cleaned {
					for _, a := range cl.Actions {
						fmt.Fprintf(io.out, "  %s: %s\n", a.Action, line(a.Detail))
					}
				}
				for _, r := range rep.Removed {
					fmt.Fprintf(io.out, "removed: %s\n", line(r))
				}
				for _, n := range rep.Notes {
					fmt.Fprintf(io.errOut, "note: %s\n", line(n))
				}
				for _, f := range rep.Failed {
					fmt.Fprintf(io.errOut, "failed: %s\n", line(f))
				}
			}
			if failed {
				return silentExit(ExitRunNotCompleted)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.DryRun, "dry-run", false, "list the orphans and what would happen; change nothing")
	f.StringArrayVar(&opts.Repos, "repo", nil, "also look at this repository (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
