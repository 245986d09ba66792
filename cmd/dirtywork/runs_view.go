package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dirtywork/dirtywork/engine/runs"
)

// openStore opens the runs store of the environment.
func openStore() (*runs.Store, error) {
	return runs.OpenDefault()
}

// runsError maps a store error to the CLI's: a bad or unknown slug and
// every refusal are usage errors (exit 2).
func runsError(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{Code: ExitUsage, Err: err}
}

func newRunsListCmd(io *streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List runs: status, liveness and what is left of each",
		Long: `Lists every run under the runs root in slug order: SLUG STATUS STARTED RESUMED
BRANCH WORKTREE CONTAINER VOLUME. WORKTREE is yes/no from git (? when git cannot
tell), CONTAINER the recorded container's state or -, VOLUME present/absent (-
when none is recorded). --json prints the rows as a JSON array, with alive (true
only while the run's process holds its liveness lock) and left (what exists of
the run outside its run dir). Exit 0.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			store, err := openStore()
			if err != nil {
				return runsError(err)
			}
			list, err := store.List(c.Context(), runs.ListOptions{Leftovers: true})
			if err != nil {
				return runsError(err)
			}
			rows := make([]runs.ListRow, len(list))
			for i, r := range list {
				rows[i] = runs.Row(r)
			}
			if asJSON {
				return writeJSON(io.out, rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(io.out, "no runs found")
				return nil
			}
			line := safeLine
			cells := make([][]string, len(rows))
			for i, r := range rows {
				cs := r.Cells()
				for j := range cs {
					cs[j] = line(cs[j])
				}
				if r.Error != "" {
					cs = append(cs, "error: "+line(r.Error))
				}
				cells[i] = cs
			}
			fmt.Fprint(io.out, runs.Table(runs.ListColumns, cells))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the rows as JSON")
	return cmd
}

func newRunsShowCmd(io *streams) *cobra.Command {
	var (
		asJSON, withDiff, markdown, raw bool
		out                             string
	)
	cmd := &cobra.Command{
		Use:   "show SLUG [--json] [--diff [--raw]] [--markdown [--out FILE] [--raw]]",
		Short: "Show one run: summary, run.json, timeline, and its diff",
		Long: `Shows one run: key: value summary lines, run.json, the transcript's timeline
and, with --diff, the run's changes (from its worktree, else its diff.patch).
--markdown prints a review document ready to paste into a pull request; --out
writes it to FILE instead. --json prints run.json (with --diff, an object
{record, diff}).

Worker text is neutralised wherever it goes, a terminal, a pipe or --out FILE:
escape sequences and control characters are shown visibly (ESC as ␛, CR as ␍,
C1 controls and bidirectional overrides as \uXXXX), newlines and tabs are kept.
JSON escapes the same characters as \uXXXX and decodes to the exact text.

--raw prints the worker's bytes unneutralised: with --diff, only the patch,
byte for byte (what 'git apply' takes; the neutralised diff can differ from it,
a CR for one); with --markdown, the document as it is. Use it only where no
terminal will show the output. The run's own record of its change is
<run_dir>/diff.patch. Exit 0; 2 for an unknown run or bad flags.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			switch {
			case out != "" && !markdown:
				return usageErrorf("--out requires --markdown")
			case raw && asJSON:
				return usageErrorf("--raw does not go with --json: JSON escapes what a terminal acts on and decodes to the exact text")
			case raw && !withDiff && !markdown:
				return usageErrorf("--raw needs --diff or --markdown")
			}
			store, err := openStore()
			if err != nil {
				return runsError(err)
			}
			rep, err := store.Report(args[0])
			if err != nil {
				return runsError(err)
			}
			var d *runs.Diff
			if withDiff {
				if d, err = store.Diff(c.Context(), args[0], runs.DiffOptions{}); err != nil {
					return runsError(err)
				}
			}
			switch {
			case asJSON:
				if d == nil {
					return writeJSON(io.out, rep.Raw)
				}
				return writeJSON(io.out, map[string]any{"record": rep.Raw, "diff": diffJSON(d)})
			case markdown:
				doc := rep.Markdown(d)
				if !raw {
					doc = safeText(doc)
				}
				if out == "" {
					_, err := fmt.Fprint(io.out, doc)
					return err
				}
				if err := os.WriteFile(out, []byte(doc), 0o600); err != nil {
					return usageErrorf("write %s: %v", out, err)
				}
				fmt.Fprintf(io.out, "wrote %s\n", safeLine(out))
				return nil
			case raw:
				return printRawPatch(io, rep, d)
			}
			var b strings.Builder
			for _, kv := range rep.Summary() {
				fmt.Fprintf(&b, "%s: %s\n", kv.Key, safeLine(kv.Value))
			}
			b.WriteString("\n" + safeText(rep.RecordJSON()) + "\n")
			if rep.TranscriptPath != "" {
				b.WriteString("\ntimeline:\n")
				for _, l := range rep.Timeline() {
					b.WriteString(safeLine(l) + "\n")
				}
			}
			if d != nil {
				b.WriteString("\ndiff:\n")
				if len(d.Patch) == 0 {
					b.WriteString(runs.NoPatchNote + "\n")
				} else {
					b.WriteString(safeText(string(d.Patch)))
				}
				for _, r := range d.Risks {
					fmt.Fprintf(&b, "warning: %s: %s\n", safeLine(r.Path), safeLine(r.Detail))
				}
			}
			_, err = fmt.Fprint(io.out, b.String())
			return err
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print run.json")
	f.BoolVar(&withDiff, "diff", false, "include the run's changes")
	f.BoolVar(&markdown, "markdown", false, "print a review document in Markdown")
	f.StringVar(&out, "out", "", "write the Markdown document to `FILE`")
	f.BoolVar(&raw, "raw", false, "print worker bytes unneutralised: the patch alone with --diff, the document with --markdown")
	return cmd
}

// printRawPatch is `runs show --diff --raw`: the patch on stdout byte for
// byte, and nothing else there, so it can be piped into git apply. What a
// person should know about it (no patch, a cut one, risky paths) goes to
// stderr, neutralised.
func printRawPatch(io *streams, rep *runs.Report, d *runs.Diff) error {
	if len(d.Patch) == 0 {
		fmt.Fprintln(io.errOut, runs.NoPatchNote)
		return nil
	}
	if _, err := io.out.Write(d.Patch); err != nil {
		return fmt.Errorf("print the diff: %w", err)
	}
	if d.Truncated {
		fmt.Fprintf(io.errOut, "warning: the diff was cut at %d bytes; the run's own patch is %s\n",
			len(d.Patch), safeLine(filepath.Join(rep.Run.Dir, "diff.patch")))
	}
	for _, r := range d.Risks {
		fmt.Fprintf(io.errOut, "warning: %s: %s\n", safeLine(r.Path), safeLine(r.Detail))
	}
	return nil
}

// diffJSON is a Diff as JSON.
func diffJSON(d *runs.Diff) map[string]any {
	files := make([]map[string]any, 0, len(d.Files))
	for _, f := range d.Files {
		files = append(files, map[string]any{"path": f.Path, "status": f.Status, "added": f.Added, "deleted": f.Deleted, "binary": f.Binary})
	}
	return map[string]any{
		"source": d.Source, "base": d.Base, "files": files, "patch": string(d.Patch), "truncated": d.Truncated,
		"warnings": nonNilRisks(d.Risks),
	}
}

func nonNilRisks(r []runs.Risk) []runs.Risk {
	if r == nil {
		return []runs.Risk{}
	}
	return r
}
