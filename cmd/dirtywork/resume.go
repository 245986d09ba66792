package main

import (
	"context"
	"maps"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dirtywork/dirtywork/engine"
	"github.com/dirtywork/dirtywork/engine/runs"
)

// carriedFlags are run's flags a resume does not take: the run being
// resumed decides them (RE-5).
var carriedFlags = map[string]bool{"repo": true, "branch-from": true, "sandbox": true}

// inheritedFlags are the flags a resume takes over from the run it resumes
// unless the command line gives them (0.9.1's precedence: the flag, then
// the resumed run's recorded value, then the built-in default). Neither
// the environment nor the config file sets them for a resume.
var inheritedFlags = map[string]bool{"allow-commit": true, "verify": true, "verify-rounds": true, "verify-timeout": true}

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

The repository, worktree, branch, base commit, sandbox mode and provider are
the resumed run's; --model, --image, --allow-commit, --verify, --verify-rounds
and --verify-timeout default to its own (what it recorded, else the built-in
default) and the command line overrides them; every other setting is as for
'dirtywork run'. --allow-commit is refused for a docker run, as for 'run'.
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
			given := engine.ResumeOverrides{
				AllowCommit: fs.Changed("allow-commit"), Verify: fs.Changed("verify"),
				VerifyRounds: fs.Changed("verify-rounds"), VerifyTimeout: fs.Changed("verify-timeout"),
			}
			fromConfig, err := applyDefaultsSkipping(fs, map[string]string{"base-url": "DIRTYWORK_BASE_URL"}, configPath(), inheritedOrCarried())
			if err != nil {
				return usageErrorf("%v", err)
			}
			spec, err := f.settings(fs, fromConfig)
			if err != nil {
				return err
			}
			baseGiven := fs.Changed("base-url") || fromConfig["base-url"]
			spec.ResumedFrom = &args[0] // marks the refusals as a resume's
			parent, child := detachMode(c)
			if parent {
				return startDetached(c.Context(), io)
			}
			req := engine.ResumeRequest{
				Target: args[0], Feedback: feedback, HasFeedback: fs.Changed("feedback"), FeedbackFile: feedbackFile,
				Spec: spec, ModelGiven: modelGiven, ImageGiven: imageGiven, ProviderGiven: providerGiven, Given: given,
			}
			store, err := runs.OpenDefault()
			if err != nil {
				return usageErrorf("%v", err)
			}
			return executeRun(c.Context(), io, spec, child, func(r *engine.Runner, s engine.Spec) (*engine.Payload, error) {
				req.Spec = s // with the API key
				return resumeInStore(c.Context(), store, r, req, baseGiven)
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

// inheritedOrCarried are the config file keys a resume ignores: the flags
// it does not take and those it inherits.
func inheritedOrCarried() map[string]bool {
	out := maps.Clone(carriedFlags)
	maps.Copy(out, inheritedFlags)
	return out
}

// resumeInStore continues an ended run of the store in its worktree with a new
// run started by r (see engine.Runner.Resume, RE-*). req.Target is a slug
// of this store, or a run directory when it holds a path separator (RE-1).
// A refusal is an *engine.PreflightError: nothing was created and the
// resumed run is as it was.
func resumeInStore(ctx context.Context, s *runs.Store, r *engine.Runner, req engine.ResumeRequest, baseGiven bool) (*engine.Payload, error) {
	if req.Run == nil {
		run, err := s.Find(req.Target)
		if err != nil {
			return nil, err
		}
		req.Run = run
	}
	req.Spec = carryProvider(req, baseGiven)
	return r.Resume(ctx, req)
}

// carryProvider points a resume at the resumed run's model server: the
// engine carries the run's provider, and when that is not the one the
// flags were resolved for, the base URL (unless given) and the key must
// be that provider's too, or the key of one would go to the other. A
// record that cannot be read is left to the engine to report.
func carryProvider(req engine.ResumeRequest, baseGiven bool) engine.Spec {
	spec := req.Spec
	if req.Run == nil {
		return spec
	}
	prior, err := runs.ReadPrior(req.Run)
	if err != nil || req.ProviderGiven || prior.Provider == spec.Provider {
		return spec
	}
	spec.Provider = prior.Provider
	if !baseGiven {
		spec.BaseURL = defaultBaseURL(prior.Provider)
	}
	spec.APIKey = ""
	if key, _, err := modelServerKey(spec.Provider, spec.BaseURL, configPath()); err == nil {
		spec.APIKey = key
	}
	return spec
}
