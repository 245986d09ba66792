package runs

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/transcript"
)

// AcceptOptions tune Accept.
type AcceptOptions struct {
	// Files, when given, are exactly the paths to commit; each must be one
	// the run changed. None means every change.
	Files []string
	// Note, ReviewSeconds and Reviewer go into the verdict.
	Note          *string
	ReviewSeconds *float64
	Reviewer      string
}

// AcceptResult is what Accept did.
type AcceptResult struct {
	Slug   string `json:"slug"`
	Branch string `json:"branch"`
	// Commit is the new branch tip; equal to Parent when there was
	// nothing to commit (Committed false).
	Commit    string   `json:"commit"`
	Parent    string   `json:"parent"`
	Committed bool     `json:"committed"`
	Files     []string `json:"files"`
	// Risks are the committed changes that make tools run code later.
	Risks    []Risk `json:"warnings"`
	Verdict  string `json:"verdict"`
	Reviewer string `json:"reviewer"`
}

// ErrStillRunning refuses an operation on a run whose process holds its
// liveness lock.
var ErrStillRunning = errors.New("still running")

// Accept records the verdict accept and commits the run's changes (all,
// or exactly opts.Files) onto its branch. The commit is plumbing on a
// temporary index built from the branch tip and the worktree's files
// (config-neutral, every file hashed without filters, nothing of the
// worker's index or git metadata read), signed by the operator's
// configured identity (else dirtywork), with the task's first line as
// subject and Dirtywork-Run / Dirtywork-Model trailers; the branch moves
// by compare-and-swap. The worktree's files are not touched; its index is
// refreshed so status shows what was left out.
func (s *Store) Accept(ctx context.Context, slug string, opts AcceptOptions) (*AcceptResult, error) {
	run, err := s.Get(slug)
	if err != nil {
		return nil, err
	}
	if run.Alive {
		return nil, fmt.Errorf("'%s' is %w: accept it once it has ended", slug, ErrStillRunning)
	}
	l, err := s.openLane(ctx, run)
	if err != nil {
		return nil, fmt.Errorf("cannot accept '%s': %w", slug, err)
	}
	if _, err := s.quarantineCrashed(run); err != nil {
		return nil, fmt.Errorf("cannot accept '%s': %w", slug, err)
	}
	if l.tip == "" {
		return nil, fmt.Errorf("cannot accept '%s': its branch %s is gone", slug, run.Record.Branch)
	}
	res, err := s.commitRun(ctx, run, l, opts.Files)
	if err != nil {
		return nil, err
	}
	reviewer := opts.Reviewer
	if reviewer == "" {
		reviewer = s.reviewer(ctx, run)
	}
	extra := transcript.AcceptFields{AcceptedCommit: res.Commit, AcceptedFiles: res.Files, AcceptedAt: transcript.FormatTime(s.now())}
	v, err := s.recordVerdict(run, VerdictOptions{Verdict: transcript.VerdictAccept, Note: opts.Note, ReviewSeconds: opts.ReviewSeconds}, reviewer, extra)
	if err != nil {
		return res, fmt.Errorf("committed %s, but: %w", res.Commit, err)
	}
	res.Verdict, res.Reviewer = string(v.Verdict), v.Reviewer
	return res, nil
}

// commitRun commits the lane's changes (or only files) onto its branch.
func (s *Store) commitRun(ctx context.Context, run *Run, l *lane, files []string) (*AcceptResult, error) {
	res := &AcceptResult{Slug: run.Slug, Branch: run.Record.Branch, Parent: l.tip, Commit: l.tip, Files: []string{}, Risks: []Risk{}}
	if onlyGitFile(l.worktree) {
		return nil, fmt.Errorf("cannot accept '%s': its worktree holds no files (export the run first: dirtywork runs export %s)", run.Slug, run.Slug)
	}
	t, err := s.tree(ctx, l, l.tip)
	if err != nil {
		return nil, fmt.Errorf("accept '%s': %w", run.Slug, err)
	}
	changes, err := s.git.DiffTrees(ctx, l.repo.Root, l.tip, t.Tree)
	if err != nil {
		return nil, fmt.Errorf("accept '%s': %w", run.Slug, err)
	}
	tree := t.Tree
	if len(files) > 0 {
		changed := map[string]bool{}
		for _, c := range changes {
			changed[c.Path] = true
		}
		var unknown []string
		for _, f := range files {
			if !changed[f] {
				unknown = append(unknown, f)
			}
		}
		if len(unknown) > 0 {
			return nil, fmt.Errorf("cannot accept '%s': not changed by the run: %s", run.Slug, strings.Join(unknown, ", "))
		}
		if tree, err = s.git.ComposeTree(ctx, l.repo.Root, l.tip, t.Tree, files); err != nil {
			return nil, fmt.Errorf("accept '%s': %w", run.Slug, err)
		}
		picked := changes[:0]
		for _, c := range changes {
			if containsString(files, c.Path) {
				picked = append(picked, c)
			}
		}
		changes = picked
	}
	for _, c := range changes {
		res.Files = append(res.Files, c.Path)
	}
	sort.Strings(res.Files)
	if len(changes) == 0 {
		return res, nil
	}
	res.Risks = Risks(changes, s.blobReader(ctx, l.repo.Root))
	id := s.identity(ctx, l.repo.Root)
	commit, err := s.git.CommitTree(ctx, l.repo.Root, tree, commitMessage(run), id.Name, id.Email, l.tip)
	if err != nil {
		return nil, fmt.Errorf("accept '%s': %w", run.Slug, err)
	}
	if err := s.git.UpdateRef(ctx, l.repo.Root, l.branch, commit, l.tip, "dirtywork accept "+run.Slug); err != nil {
		return nil, fmt.Errorf("accept '%s': the branch moved meanwhile: %w", run.Slug, err)
	}
	res.Commit, res.Committed = commit, true
	if admin := gitops.AdminDir(l.repo.CommonDir, l.worktree); admin != "" {
		if err := s.git.ResetIndex(ctx, admin, l.worktree, commit); err != nil {
			return res, fmt.Errorf("accepted as %s, but: %w", commit, err)
		}
	}
	l.tip = commit
	return res, nil
}

// commitMessage is the task's first line, then the trailers.
func commitMessage(run *Run) string {
	subject, _, _ := strings.Cut(strings.TrimSpace(run.Record.Task), "\n")
	subject = strings.TrimSpace(subject)
	if subject == "" {
		subject = "dirtywork run " + run.Slug
	}
	model := run.Record.Model
	if model == "" {
		model = "unknown"
	}
	return fmt.Sprintf("%s\n\nDirtywork-Run: %s\nDirtywork-Model: %s\n", subject, run.Slug, model)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
