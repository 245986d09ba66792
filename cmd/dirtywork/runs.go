package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	workerimage "github.com/dirtywork/dirtywork/docker"
	"github.com/dirtywork/dirtywork/engine"
	"github.com/dirtywork/dirtywork/engine/runs"
)

// newRunsCmd is `dirtywork runs`: the review loop after a run, every verb
// a call into engine/runs.
func newRunsCmd(io *streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show, export, clean and judge past runs",
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return withHint(fmt.Errorf("unknown runs command %q", args[0]), "see 'dirtywork runs --help'")
			}
			return withHint(errors.New("runs needs a command"), "see 'dirtywork runs --help'")
		},
	}
	cmd.AddCommand(newRunsListCmd(io), newRunsShowCmd(io), newRunsExportCmd(io), newRunsVerdictCmd(io),
		newRunsAcceptCmd(io), newRunsMergeCmd(io), newRunsCleanCmd(io), newRunsSnapshotCmd(io), newRunsReconcileCmd(io),
		newRunsWaitCmd(io))
	return cmd
}

func newRunsExportCmd(io *streams) *cobra.Command {
	var opts runs.ExportOptions
	cmd := &cobra.Command{
		Use:   "export SLUG",
		Short: "Export a docker run's kept work volume into its worktree",
		Long: `Exports the work volume a docker run kept (its export failed, or it ran with
--keep-volume) into the run's worktree, which must hold nothing but its .git
file, exactly as the run's own export would have: the tree is read through the
Docker Engine API from a container that never starts, validated under the caps
given here, written into the worktree, and diffed against the base commit into
the run's diff.patch. run.json gets the export's fields; a run whose export had
failed becomes completed. The volume is removed afterwards unless --keep-volume
(and kept whenever the export fails).

Exit 0 when exported, 1 when the export failed, 2 when it was refused before
anything was done. A step after a done export that fails (run.json cannot be
updated) is reported on stderr and leaves the exit code to the export.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if opts.MaxPatchMB < 1 || opts.MaxWorktreeMB < 1 || opts.MaxWorktreeFiles < 1 {
				return usageErrorf("--max-patch-mb, --max-worktree-mb and --max-worktree-files must be at least 1")
			}
			store, err := runs.OpenDefault(runs.WithDefaultImage(workerimage.DefaultImage(Version())))
			if err != nil {
				return runsError(err)
			}
			res, err := store.Export(c.Context(), args[0], opts)
			var pe *engine.PreflightError
			switch {
			case errors.As(err, &pe):
				return withHint(errors.New(pe.Msg), pe.Hint)
			case err != nil && res == nil:
				return err
			}
			return reportExport(io, res, err)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.MaxPatchMB, "max-patch-mb", 10, "largest diff.patch kept, in MiB")
	f.BoolVar(&opts.KeepVolume, "keep-volume", false, "keep the volume after a successful export")
	f.IntVar(&opts.MaxWorktreeMB, "max-worktree-mb", 2048, "largest tree exported, in MiB")
	f.IntVar(&opts.MaxWorktreeFiles, "max-worktree-files", 200000, "most entries exported")
	return cmd
}

// reportExport prints a done or failed export and picks the exit code
// from the export's outcome alone: 0 exported, 1 failed. laterErr,
// a step after the export that failed (run.json not updated), is a
// warning on stderr: the work is in the worktree either way.
func reportExport(io *streams, res *runs.ExportResult, laterErr error) error {
	if laterErr != nil {
		fmt.Fprintf(io.errOut, "warning: %v\n", laterErr)
	}
	if !res.OK {
		fmt.Fprintf(io.errOut, "%s\nthe volume was kept; fix the cause and run 'dirtywork runs export %s' again\n", safeLine(res.Status), res.Slug)
		return silentExit(ExitRunNotCompleted)
	}
	fmt.Fprintf(io.out, "exported '%s' into %s\n", res.Slug, safeLine(res.Worktree))
	if res.Fin.DiffStat != "" {
		// The stat names the worker's files.
		fmt.Fprintln(io.out, safeText(res.Fin.DiffStat))
	}
	return nil
}
