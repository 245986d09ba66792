package runs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dirtywork/dirtywork/transcript"
)

// Find looks up the run a command names (RE-1): a target with a path
// separator (or an absolute one) is that run directory, symlinks
// resolved, wherever it lies; anything else is a slug of this store.
// An unknown or invalid target is a *Refusal. The run is returned even
// when its run.json cannot be read (Run.Err says why), so the caller
// words that itself.
func (s *Store) Find(target string) (*Run, error) {
	if strings.ContainsRune(target, filepath.Separator) || filepath.IsAbs(target) {
		abs, err := filepath.Abs(target)
		if err != nil {
			return nil, refuse("", "run directory %s: %v", target, err)
		}
		dir, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, refuse("", "no run directory at %s", abs)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, refuse("", "%s is not a run directory", abs)
		}
		return s.load(filepath.Base(dir), dir), nil
	}
	if err := transcript.ValidSlug(target); err != nil {
		return nil, &Refusal{Msg: err.Error(), Hint: "see 'dirtywork runs list'", Err: err}
	}
	dir, err := transcript.FindRunDir(s.root, target)
	if err != nil {
		return nil, &Refusal{Msg: err.Error(), Hint: "see 'dirtywork runs list'", Err: err}
	}
	return s.load(target, dir), nil
}

// Prior is an earlier run's record as a resume reads it (RE-2), with the
// gaps run.json may have filled from its transcript and the defaults.
type Prior struct {
	Slug, Dir, Repo, Worktree, Branch, BaseCommit, Sandbox string
	Status                                                 transcript.Status
	// Task and Model come from run_start when run.json lacks them.
	Task, Model string
	// Turns is run.json's, else the last run_end's; nil when neither says.
	Turns *int
	// Provider defaults to openai.
	Provider string
	// Image is the recorded image, "" when none.
	Image       string
	AllowCommit bool
	// VerifyCommand is verify_command, else the recorded verify.command.
	VerifyCommand               string
	VerifyRounds, VerifyTimeout *int
	Record                      transcript.RunRecord
}

// ReadPrior checks a found run's record as a resume needs it (RE-2): an
// object with the strings slug, repo, worktree, branch, base_commit,
// sandbox and status; task and model, when missing, from the transcript's
// first run_start; turns, when missing, from its last run_end. Anything
// missing is a *Refusal.
func ReadPrior(run *Run) (*Prior, error) {
	slug := filepath.Base(run.Dir)
	if run.Err != nil {
		if errors.Is(run.Err, fs.ErrNotExist) {
			return nil, refuse("", "run '%s' has no run.json in %s", slug, run.Dir)
		}
		return nil, refuse("", "%v", run.Err)
	}
	rec := run.Record
	pr := &Prior{
		Record: rec, Slug: rec.Slug, Dir: run.Dir, Repo: rec.Repo, Worktree: rec.Worktree, Branch: rec.Branch,
		BaseCommit: rec.BaseCommit, Sandbox: rec.Sandbox, Status: rec.Status,
	}
	for _, f := range []struct{ key, val string }{
		{"slug", pr.Slug},
		{"repo", pr.Repo},
		{"worktree", pr.Worktree},
		{"branch", pr.Branch},
		{"base_commit", pr.BaseCommit},
		{"sandbox", pr.Sandbox},
		{"status", string(pr.Status)},
	} {
		if f.val == "" { // absent, null, or not a string
			return nil, refuse("", "run.json of '%s' is missing '%s'", slug, f.key)
		}
	}
	if pr.Sandbox != "docker" && pr.Sandbox != "none" {
		return nil, refuse("", "run.json of '%s' records an unknown sandbox '%s'", slug, pr.Sandbox)
	}
	pr.Task, pr.Model, pr.Turns = rec.Task, rec.Model, rec.Turns
	if pr.Task == "" || pr.Model == "" || pr.Turns == nil {
		start, end := transcriptEnds(filepath.Join(run.Dir, transcript.TranscriptName))
		if pr.Task == "" || pr.Model == "" {
			if start == nil {
				return nil, refuse("", "run '%s': run.json lacks its task or model and the transcript has no run_start", slug)
			}
			if pr.Task == "" {
				pr.Task = start.Task
			}
			if pr.Model == "" {
				pr.Model = start.Model
			}
		}
		if pr.Turns == nil && end != nil {
			t := end.Turns
			pr.Turns = &t
		}
	}
	pr.Provider = rec.Provider
	if pr.Provider == "" {
		pr.Provider = "openai"
	}
	pr.Image, pr.AllowCommit = Str(rec.Image), rec.AllowCommit
	pr.VerifyCommand = Str(rec.VerifyCommand)
	if pr.VerifyCommand == "" && rec.Verify != nil {
		pr.VerifyCommand = rec.Verify.Command
	}
	pr.VerifyRounds, pr.VerifyTimeout = rec.VerifyRounds, rec.VerifyTimeout
	return pr, nil
}

// transcriptEnds finds the first run_start and the last runner run_end of
// a transcript; either is nil when absent or unreadable.
func transcriptEnds(path string) (*transcript.RunStart, *transcript.RunEnd) {
	lines, _, err := transcript.ReadFile(path)
	if err != nil && len(lines) == 0 {
		return nil, nil
	}
	var start *transcript.RunStart
	var end *transcript.RunEnd
	for _, l := range lines {
		switch l.Event {
		case transcript.EventRunStart:
			if start == nil {
				if ev, err := l.Decode(); err == nil {
					if rs, ok := ev.(transcript.RunStart); ok {
						start = &rs
					}
				}
			}
		case transcript.EventRunEnd:
			if ev, err := l.Decode(); err == nil {
				if re, ok := ev.(transcript.RunEnd); ok {
					end = &re
				}
			}
		}
	}
	return start, end
}
