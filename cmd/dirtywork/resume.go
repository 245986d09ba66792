package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dirtywork/dirtywork/engine"
	"github.com/dirtywork/dirtywork/engine/runs"
)

// carriedFlags are run's flags a resume does not take: the run being
// resumed decides them (RE-5).
var carriedFlags = map[string]bool{
	"repo": true, "branch-from": true, "sandbox": true, "allow-commit": true,
	"verify": true, "verify-rounds": true, "verify-timeout": true,
}

func newResumeCmd(io *streams) *cobra.Command {
	var f runFlags
	var feedback, feedbackFile string
	cmd := &cobra.Command{
		Use:   "resume SLUG|RUN_DIR [--feedback TEXT | --feedback-file F]",
		Short: "Continue an ended run in its worktree, with review feedback or without",
		Long: `Starts a new run that continues an ended one in the same worktree and on the
same branch: the worker is told the earlier task, how the earlier run ended and
what it did last, and (with --feedback or --feedback-file) what a reviewer asks
for. A run that completed is resumed only with feedback.

The repository, worktree, branch, base commit, sandbox mode, provider,
--allow-commit and the verify settings are the resumed run's; --model and
--image default to its own; every other setting is as for 'dirtywork run'.
SLUG|RUN_DIR is a run's slug, or its directory when it contains a '/'.

In the docker sandbox the container is seeded with the worktree's files; at the
end they are set aside in <worktree>.pre-resume-<new slug> while the export
writes the container's tree, and moved back if the export fails.

Prints one JSON object, exits like 'dirtywork run' (0 completed, 1 another
status, 2 refused with nothing created and the resumed run untouched).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("resume takes exactly one SLUG or RUN_DIR")
			}
			fs := c.Flags()
			// Only the command line overrides what the run carries; the
			// environment and the config file do not.
			modelGiven, imageGiven, providerGiven := fs.Changed("model"), fs.Changed("image"), fs.Changed("provider")
			fromConfig, err := applyDefaultsSkipping(fs, map[string]string{"base-url": "DIRTYWORK_BASE_URL"}, configPath(), carriedFlags)
			if err != nil {
				return usageErrorf("%v", err)
			}
			spec, err := f.settings(fs, fromConfig)
			if err != nil {
				return err
			}
			spec.ResumedFrom = &args[0] // marks the refusals as a resume's
			parent, child := detachMode(c)
			if parent {
				return startDetached(c.Context(), io)
			}
			req := engine.ResumeRequest{
				Target: args[0], Feedback: feedback, HasFeedback: fs.Changed("feedback"), FeedbackFile: feedbackFile,
				Spec: spec, ModelGiven: modelGiven, ImageGiven: imageGiven, ProviderGiven: providerGiven,
			}
			store, err := runs.OpenDefault()
			if err != nil {
				return usageErrorf("%v", err)
			}
			return executeRun(c.Context(), io, spec, child, func(r *engine.Runner, s engine.Spec) (*engine.Payload, error) {
				req.Spec = s // with the API key
				return store.Resume(c.Context(), r, req)
			})
		},
	}
	all := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.register(all)
	all.VisitAll(func(fl *pflag.Flag) {
		if !carriedFlags[fl.Name] {
			cmd.Flags().AddFlag(fl)
		}
	})
	cmd.Flags().StringVar(&feedback, "feedback", "", "the reviewer's feedback: what the resumed run should change (at most 64000 characters)")
	cmd.Flags().StringVar(&feedbackFile, "feedback-file", "", "read the feedback from this file")
	addDetachFlags(cmd)
	return cmd
}
