package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dirtywork/dirtywork/gitops"
)

// sessionEnv names the variable a lane's owner session is taken from when
// --session is not given.
const sessionEnv = "DIRTYWORK_SESSION"

// newLaneCmd is `dirtywork lane`: isolated worktrees for other workflow
// engines, bound to an owner id and recorded so they survive the owner's
// crash.
func newLaneCmd(io *streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lane",
		Short: "Isolated git worktrees for other workflow engines",
		Long: `A lane is a git worktree <repo>/.worktrees/dw-<id> on its own branch
dirtywork/<id>, bound to an owner id (for example RUN/TASK) and recorded in a
manifest in the repository's git dir, so the binding survives a crash of its
owner. .worktrees/ is added to .git/info/exclude, never to a tracked file, so
the operator's git status stays clean.

Closing a lane never loses work: a lane with uncommitted changes or commits
beyond its base is kept (retained-dirty); a clean one is removed. Closing
twice is fine. stdout carries one JSON object (lane list: text, or JSON with
--json); errors go to stderr and exit with status 2.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return withHint(fmt.Errorf("unknown lane command %q", args[0]), "see 'dirtywork lane --help'")
			}
			return withHint(errors.New("lane needs a command: open, close, list or recover"), "see 'dirtywork lane --help'")
		},
	}
	cmd.AddCommand(newLaneOpenCmd(io), newLaneCloseCmd(io), newLaneListCmd(io), newLaneRecoverCmd(io))
	return cmd
}

func newLaneOpenCmd(io *streams) *cobra.Command {
	var (
		repoPath, id, from, session string
		ownerPID                    int
		noCheckout                  bool
	)
	cmd := &cobra.Command{
		Use:   "open --repo REPO --id ID [--from REF]",
		Short: "Create a lane and print {id, worktree, branch, base_commit}",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if repoPath == "" {
				return withHint(errors.New("lane open needs --repo"), "see 'dirtywork lane open --help'")
			}
			if !c.Flags().Changed("id") {
				return withHint(errors.New("lane open needs --id"), "see 'dirtywork lane open --help'")
			}
			if session == "" {
				session = os.Getenv(sessionEnv)
			}
			if !c.Flags().Changed("owner-pid") {
				// lane open itself exits at once; the lane belongs to
				// whoever ran it.
				ownerPID = os.Getppid()
			}
			// The id is checked before the repository so a bad id is
			// refused the same way everywhere.
			if _, err := gitops.EncodeLaneID(id); err != nil {
				return laneError(err)
			}
			m, err := laneManager(c.Context(), repoPath)
			if err != nil {
				return err
			}
			lane, err := m.Open(c.Context(), gitops.OpenOptions{
				ID: id, From: from, NoCheckout: noCheckout, OwnerPID: ownerPID, OwnerSession: session,
			})
			if err != nil {
				return laneError(err)
			}
			return writeJSON(io.out, struct {
				ID         string `json:"id"`
				Worktree   string `json:"worktree"`
				Branch     string `json:"branch"`
				BaseCommit string `json:"base_commit"`
			}{lane.ID, lane.Worktree, lane.Branch, lane.BaseCommit})
		},
	}
	f := cmd.Flags()
	f.StringVar(&repoPath, "repo", "", "git work tree to open the lane in (required)")
	f.StringVar(&id, "id", "", "owner id the lane is bound to, e.g. RUN/TASK (required)")
	f.StringVar(&from, "from", "", "ref to branch from (default: the repository's HEAD)")
	f.IntVar(&ownerPID, "owner-pid", 0, "pid recorded as the lane's owner (default: the calling process)")
	f.StringVar(&session, "session", "", "owner session recorded with the lane (default: $"+sessionEnv+")")
	f.BoolVar(&noCheckout, "no-checkout", false, "create the worktree with only its .git file, no files checked out")
	return cmd
}

func newLaneCloseCmd(io *streams) *cobra.Command {
	var repoPath string
	cmd := &cobra.Command{
		Use:   "close ID [--repo REPO]",
		Short: "Remove a clean lane or retain a dirty one; print {id, status, worktree, branch, changed}",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return withHint(fmt.Errorf("lane close needs exactly one lane id, got %d arguments", len(args)), "see 'dirtywork lane close --help'")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			m, err := laneManager(c.Context(), repoOrCwd(repoPath))
			if err != nil {
				return err
			}
			res, err := m.Close(c.Context(), args[0])
			if err != nil {
				return laneError(err)
			}
			return writeJSON(io.out, res)
		},
	}
	cmd.Flags().StringVar(&repoPath, "repo", "", "repository of the lane (default: the one containing the current directory)")
	return cmd
}

func newLaneListCmd(io *streams) *cobra.Command {
	var (
		repoPath string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "list [--repo REPO] [--json]",
		Short: "Show every lane: clean or dirty, changed files, worktree and branch",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			m, err := laneManager(c.Context(), repoOrCwd(repoPath))
			if err != nil {
				return err
			}
			infos, err := m.List(c.Context())
			if err != nil {
				return laneError(err)
			}
			if asJSON {
				return writeJSON(io.out, infos)
			}
			return writeLaneList(io.out, infos)
		},
	}
	cmd.Flags().StringVar(&repoPath, "repo", "", "repository (default: the one containing the current directory)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array instead of text")
	return cmd
}

func newLaneRecoverCmd(io *streams) *cobra.Command {
	var repoPath string
	cmd := &cobra.Command{
		Use:   "recover [--repo REPO]",
		Short: "Forget lanes whose worktrees are gone; keep branches with commits; never touch live lanes",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			m, err := laneManager(c.Context(), repoOrCwd(repoPath))
			if err != nil {
				return err
			}
			rep, err := m.Recover(c.Context())
			if err != nil {
				return laneError(err)
			}
			return writeJSON(io.out, rep)
		},
	}
	cmd.Flags().StringVar(&repoPath, "repo", "", "repository (default: the one containing the current directory)")
	return cmd
}

// noArgs refuses positional arguments as a usage error.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return withHint(fmt.Errorf("unexpected argument %q", args[0]), fmt.Sprintf("see '%s --help'", c.CommandPath()))
	}
	return nil
}

// repoOrCwd is --repo, or the current directory when it was not given.
func repoOrCwd(repo string) string {
	if repo == "" {
		return "."
	}
	return repo
}

// laneManager resolves the repository. Refusals say why and never fall
// back to some other checkout.
func laneManager(ctx context.Context, repoPath string) (*gitops.Manager, error) {
	repo, err := gitops.ResolveRepo(ctx, repoPath)
	if err != nil {
		return nil, laneError(err)
	}
	return gitops.NewManager(nil, repo), nil
}

// laneError adds a hint to the gitops refusals where one helps; every
// lane error exits 2.
func laneError(err error) error {
	switch {
	case errors.Is(err, gitops.ErrNotDir), errors.Is(err, gitops.ErrNotWorkTree):
		return withHint(err, "lanes need a git work tree: pass --repo with a path inside one")
	case errors.Is(err, gitops.ErrNoCommits):
		return withHint(err, "lanes branch from a commit: make a first commit")
	case errors.Is(err, gitops.ErrWorktreesNotDir):
		return withHint(err, "move it aside; lanes live in <repo>/.worktrees")
	case errors.Is(err, gitops.ErrNoLane):
		return withHint(err, "see 'dirtywork lane list'")
	}
	return err // unclassified errors exit 2 as well
}

// writeLaneList prints lanes for people:
//
//	run-7/task-3  dirty
//	  worktree: /repo/.worktrees/dw-run-7_2ftask-3
//	  branch:   dirtywork/run-7_2ftask-3
//	  base:     d1015c2e...
//	  changed:  ?? agent-work.txt
func writeLaneList(w io.Writer, infos []gitops.LaneInfo) error {
	// Lane ids, changed paths and errors come from orchestrators and the
	// worker (file names): neutralised wherever they are printed.
	safe := safeLine
	var b strings.Builder
	if len(infos) == 0 {
		b.WriteString("no lanes\n")
	}
	for _, l := range infos {
		fmt.Fprintf(&b, "%s  %s\n", safe(l.ID), l.State)
		worktree := l.Worktree
		if !l.WorktreeExists {
			worktree += " (missing)"
		} else if !l.KnownToGit {
			worktree += " (not a worktree git knows)"
		}
		fmt.Fprintf(&b, "  worktree: %s\n", safe(worktree))
		fmt.Fprintf(&b, "  branch:   %s\n", safe(l.Branch))
		fmt.Fprintf(&b, "  base:     %s\n", l.BaseCommit)
		if l.Status != gitops.StatusOpen {
			fmt.Fprintf(&b, "  status:   %s\n", l.Status)
		}
		if l.CommitsAhead > 0 {
			fmt.Fprintf(&b, "  commits:  %d beyond base\n", l.CommitsAhead)
		}
		for i, c := range l.Changed {
			label := "           "
			if i == 0 {
				label = "  changed: "
			}
			fmt.Fprintf(&b, "%s %s\n", label, safe(c))
		}
		if l.Error != "" {
			fmt.Fprintf(&b, "  error:    %s\n", safe(l.Error))
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write lane list: %w", err)
	}
	return nil
}
