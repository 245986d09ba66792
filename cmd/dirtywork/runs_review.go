package main

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/transcript"
)

// reviewFlags are the flags every judging verb shares.
type reviewFlags struct {
	note          string
	reviewSeconds float64
	reviewer      string
}

func (f *reviewFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.note, "note", "", "the reviewer's note")
	fl.Float64Var(&f.reviewSeconds, "review-seconds", math.NaN(), "time spent reviewing, in seconds")
	fl.StringVar(&f.reviewer, "reviewer", "", "who judged (default: the operator's git user.name, else $USER)")
}

func (f *reviewFlags) values(cmd *cobra.Command) (note *string, secs *float64, err error) {
	if cmd.Flags().Changed("note") {
		n := f.note
		note = &n
	}
	if cmd.Flags().Changed("review-seconds") {
		if math.IsNaN(f.reviewSeconds) || math.IsInf(f.reviewSeconds, 0) || f.reviewSeconds < 0 {
			return nil, nil, usageErrorf("--review-seconds must be a number of at least 0")
		}
		s := f.reviewSeconds
		secs = &s
	}
	return note, secs, nil
}

func newRunsVerdictCmd(io *streams) *cobra.Command {
	var rf reviewFlags
	cmd := &cobra.Command{
		Use:   "verdict SLUG accept|reject|cleanup [--note T] [--review-seconds N]",
		Short: "Record a review verdict in run.json",
		Long: `Records verdict, note, verdict_at, review_seconds, time_to_verdict_s (verdict_at
minus ended) and reviewer in the run's run.json, merged under its lock so a run
writing its end at the same moment loses nothing. It does not look at the run's
status; to commit the run's work as well, use 'runs accept'. Exit 0; 2 for an
unknown run or a bad verdict.`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			v, err := transcript.ParseVerdict(args[1])
			if err != nil {
				return usageErrorf("%v", err)
			}
			note, secs, err := rf.values(c)
			if err != nil {
				return err
			}
			store, err := openStore()
			if err != nil {
				return runsError(err)
			}
			res, err := store.Verdict(c.Context(), args[0], runs.VerdictOptions{Verdict: v, Note: note, ReviewSeconds: secs, Reviewer: rf.reviewer})
			if err != nil {
				return runsError(err)
			}
			fmt.Fprintf(io.out, "recorded verdict '%s' for '%s'\n", res.Verdict, res.Slug)
			return nil
		},
	}
	rf.add(cmd)
	return cmd
}

func newRunsAcceptCmd(io *streams) *cobra.Command {
	var (
		rf     reviewFlags
		files  []string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "accept SLUG [--files a,b] [--json]",
		Short: "Accept a run: verdict accept and a commit of its changes onto its branch",
		Long: `Records the verdict accept and commits the run's changes (all of them, or
exactly the paths given with --files) onto the run's branch. The commit is made
with plumbing on a temporary index, config-neutral: no hook, filter or driver
runs, and nothing the worker wrote into git metadata is read. Author and
committer are your configured git identity, else dirtywork; the message is the
task's first line with Dirtywork-Run and Dirtywork-Model trailers.

A warning goes to stderr (and into "warnings" with --json) when the change
touches what makes tools run code later: a .gitattributes naming filters or
drivers, .gitmodules, hook-like paths, CI workflows, new executable bits.
Exit 0; 2 when refused (unknown run, still running, a file the run did not
change, a worktree that is not the run's).`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			note, secs, err := rf.values(c)
			if err != nil {
				return err
			}
			store, err := openStore()
			if err != nil {
				return runsError(err)
			}
			res, err := store.Accept(c.Context(), args[0], runs.AcceptOptions{Files: cleanList(files), Note: note, ReviewSeconds: secs, Reviewer: rf.reviewer})
			if err != nil {
				return runsError(err)
			}
			warnRisks(io, res.Risks)
			if asJSON {
				return writeJSON(io.out, res)
			}
			if !res.Committed {
				fmt.Fprintf(io.out, "accepted '%s': nothing to commit, %s stays at %s\n", res.Slug, safeLine(res.Branch), short(res.Commit))
				return nil
			}
			fmt.Fprintf(io.out, "accepted '%s': %s on %s (%d files)\n", res.Slug, short(res.Commit), safeLine(res.Branch), len(res.Files))
			return nil
		},
	}
	rf.add(cmd)
	cmd.Flags().StringSliceVar(&files, "files", nil, "commit exactly these paths (comma-separated)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newRunsMergeCmd(io *streams) *cobra.Command {
	var (
		rf           reviewFlags
		into         string
		files        []string
		asJSON, plan bool
	)
	cmd := &cobra.Command{
		Use:   "merge SLUG [--into BRANCH] [--dry-run] [--json]",
		Short: "Merge an accepted run into the branch it started from",
		Long: `Accepts the run first if needed (see 'runs accept'), then brings its branch
into the branch the run started from (or --into BRANCH), only when
'git merge-tree --write-tree' says the merge is conflict-free. Refs move by
plumbing and compare-and-swap. When that branch is checked out, its checkout must
be clean and is updated without hooks, filters or attribute drivers. Otherwise it
refuses and says why. --dry-run prints the forecast (base moved, conflicts,
checkout) and changes nothing. Exit 0; 2 when refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			note, secs, err := rf.values(c)
			if err != nil {
				return err
			}
			store, err := openStore()
			if err != nil {
				return runsError(err)
			}
			if plan {
				f, err := store.Forecast(c.Context(), args[0], into)
				if err != nil {
					return runsError(err)
				}
				if asJSON {
					return writeJSON(io.out, f)
				}
				printForecast(io, f)
				return nil
			}
			res, err := store.Merge(c.Context(), args[0], runs.MergeOptions{Into: into, Files: cleanList(files), Note: note, ReviewSeconds: secs, Reviewer: rf.reviewer})
			switch {
			case res != nil && res.Commit != "" && !res.AlreadyMerged:
				warnRisks(io, res.Warnings) // everything the merge brought
			case res != nil && res.Accept != nil:
				warnRisks(io, res.Accept.Risks)
			}
			var refused *runs.RefusedError
			if errors.As(err, &refused) {
				return &exitError{Code: ExitUsage, Err: err, Hint: "see 'dirtywork runs merge " + args[0] + " --dry-run'"}
			}
			if err != nil {
				return runsError(err)
			}
			if asJSON {
				return writeJSON(io.out, res)
			}
			switch {
			case res.AlreadyMerged:
				fmt.Fprintf(io.out, "'%s' is already in %s\n", res.Slug, safeLine(res.Into))
			case res.FastForward:
				fmt.Fprintf(io.out, "merged '%s' into %s: fast-forward to %s\n", res.Slug, safeLine(res.Into), short(res.Commit))
			default:
				fmt.Fprintf(io.out, "merged '%s' into %s: merge commit %s\n", res.Slug, safeLine(res.Into), short(res.Commit))
			}
			if res.UpdatedCheckout != "" {
				fmt.Fprintf(io.out, "updated the checkout at %s\n", safeLine(res.UpdatedCheckout))
			}
			return nil
		},
	}
	rf.add(cmd)
	f := cmd.Flags()
	f.StringVar(&into, "into", "", "merge into `BRANCH` instead of the one the run started from")
	f.StringSliceVar(&files, "files", nil, "when accepting first, commit exactly these paths")
	f.BoolVar(&plan, "dry-run", false, "print the merge forecast; change nothing")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func printForecast(io *streams, f *runs.MergeForecast) {
	line := safeLine
	fmt.Fprintf(io.out, "into: %s\n", dashed(line(f.Into)))
	fmt.Fprintf(io.out, "base moved: %v\n", f.BaseMoved)
	fmt.Fprintf(io.out, "fast-forward: %v\n", f.FastForward)
	fmt.Fprintf(io.out, "already merged: %v\n", f.AlreadyMerged)
	fmt.Fprintf(io.out, "uncommitted work to accept: %v\n", f.Pending)
	fmt.Fprintf(io.out, "conflicts: %s\n", dashed(line(strings.Join(f.Conflicts, ", "))))
	fmt.Fprintf(io.out, "checked out at: %s\n", dashed(line(f.CheckedOutAt)))
	if f.OK() {
		fmt.Fprintln(io.out, "would merge: yes")
		return
	}
	fmt.Fprintln(io.out, "would merge: no")
	for _, r := range f.Reasons {
		fmt.Fprintf(io.out, "  %s\n", line(r))
	}
}

func warnRisks(io *streams, risks []runs.Risk) {
	for _, r := range risks {
		fmt.Fprintf(io.errOut, "warning: %s: %s\n", safeLine(r.Path), safeLine(r.Detail))
	}
}

func cleanList(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func dashed(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
