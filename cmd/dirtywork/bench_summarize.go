package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/transcript"
)

func newBenchSummarizeCmd(io *streams) *cobra.Command {
	var compare string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "summarize FILE",
		Short: "Summarize a bench results file, or compare two",
		Long: `Prints the per-case table and per-model statistics of a bench results file
(a JSONL file of one row per case), exactly as the Python original prints them.
Verdicts and review seconds are read from each run's run.json now, so a verdict
given after the sweep counts at once; a run that is gone keeps the row's.

With --compare OTHER, prints the original's two paired tables instead, cells
"A -> B (Δ)" with A = FILE and B = OTHER.

When the rows carry this build's keys (failure_class, serving, time,
fix_round), per model and serving setup follow: the pass rate with its Wilson
and task-clustered 95% intervals, pass@k and pass^k, how acceptance agrees with
the verdicts, review seconds per accepted run, failure classes and the median
time split; with --compare, the exact McNemar test over the cases both files ran.

--json prints everything as one JSON object instead (see the bench package's
Summary). A line that is not a row is reported on stderr with its number and
skipped; the rest is summarized. Exit 0, or 2 when a file cannot be read.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return benchSummarize(io, args[0], compare, asJSON)
		},
	}
	cmd.Flags().StringVar(&compare, "compare", "", "a second results file to compare FILE with")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as one JSON object")
	return cmd
}

func benchSummarize(io *streams, file, compare string, asJSON bool) error {
	a, err := readResultsFile(file)
	if err != nil {
		return err
	}
	var b *bench.Results
	if compare != "" {
		if b, err = readResultsFile(compare); err != nil {
			return err
		}
	}
	root, err := transcript.RunsRoot()
	if err != nil {
		return err
	}
	sum := bench.Summarize(a, b, bench.LiveVerdicts(root))
	for _, p := range sum.Problems {
		fmt.Fprintf(io.errOut, "warning: %s line %d: %s; skipped\n", p.File, p.Line, p.Error)
	}
	if asJSON {
		return sum.WriteJSON(io.out)
	}
	return sum.WriteText(io.out)
}

// readResultsFile reads a results file. Anything that is not a regular
// file is "no such file" (B-10), as in the original; a file that cannot be
// read is its reason. Both exit 2.
func readResultsFile(path string) (*bench.Results, error) {
	if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() {
		return nil, usageErrorf("no such file '%s'", path)
	}
	res, err := bench.ReadResults(path)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return res, nil
}
