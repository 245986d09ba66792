package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/export"
	"github.com/dirtywork/dirtywork/transcript"
)

// CleanOptions tune Clean.
type CleanOptions struct {
	// Force removes a dirty worktree, a branch with commits beyond its
	// base and a crashed run's leftovers; the work is parked first.
	Force bool
	// KeepTranscript keeps run.json and transcript.jsonl in the run dir.
	KeepTranscript bool
	// DryRun says what would be done, doing nothing.
	DryRun bool
}

// Action is one line of what Clean did: `<action>: <detail>`.
type Action struct {
	Action string `json:"action"`
	Detail string `json:"detail"`
}

func (a Action) String() string { return a.Action + ": " + a.Detail }

// Skipped reports an action that left something in place for a reason.
func (a Action) Skipped() bool { return strings.HasPrefix(a.Action, "skip") }

// CleanResult is what Clean did to one run.
type CleanResult struct {
	Slug    string   `json:"slug"`
	Actions []Action `json:"actions"`
	// Parked is the ref the run's work was parked under, "" when none was.
	Parked string `json:"parked"`
	DryRun bool   `json:"dry_run"`
}

// Skipped reports a result with any skip action (exit 1 for the CLI).
func (r *CleanResult) Skipped() bool {
	for _, a := range r.Actions {
		if a.Skipped() {
			return true
		}
	}
	return false
}

type cleaner struct {
	s    *Store
	opts CleanOptions
	res  *CleanResult
	run  *Run
}

func (c *cleaner) act(action, format string, args ...any) {
	c.res.Actions = append(c.res.Actions, Action{Action: action, Detail: fmt.Sprintf(format, args...)})
}

func (c *cleaner) skipped() bool { return c.res.Skipped() }

// Clean removes what a finished run left, never deleting work that
// is merged nowhere: a kept volume whose tree never reached the worktree
// is exported into it first, and with Force a branch with commits beyond
// its base or a worktree with changes is parked under
// refs/dirtywork/parked/<slug> before it goes. Containers and volumes go
// only when their labels name this run; what is already gone is fine, and
// cleaning twice is too. It never fails: every problem is a skip action.
func (s *Store) Clean(ctx context.Context, slug string, opts CleanOptions) *CleanResult {
	c := &cleaner{s: s, opts: opts, res: &CleanResult{Slug: slug, Actions: []Action{}, DryRun: opts.DryRun}}
	c.clean(ctx)
	return c.res
}

// CleanAll cleans every run under the root.
func (s *Store) CleanAll(ctx context.Context, opts CleanOptions) ([]*CleanResult, error) {
	slugs, err := s.slugs()
	if err != nil {
		return nil, err
	}
	out := make([]*CleanResult, 0, len(slugs))
	for _, slug := range slugs {
		if _, err := os.Lstat(filepath.Join(s.root, slug, transcript.RecordName)); err != nil {
			continue
		}
		out = append(out, s.Clean(ctx, slug, opts))
	}
	return out, nil
}

func (c *cleaner) clean(ctx context.Context) {
	slug := c.res.Slug
	run, err := c.s.Get(slug)
	if err != nil {
		if ts, ok := c.s.cleaned(slug); ok && c.opts.Force && errors.Is(err, ErrNoSuchRun) {
			// Cleaning is idempotent: with --force, a run this root's clean
			// removed is gone, which is what was asked. (Without --force a
			// missing run is a skip, as in 0.9.1.)
			detail := fmt.Sprintf("%s (cleaned already, at %s", ts.RunDir, ts.CleanedAt)
			if ts.ParkedRef != "" {
				detail += "; its work parked under " + ts.ParkedRef
			}
			c.act("absent-rundir", "%s)", detail)
			return
		}
		c.act("skip", "%v", err)
		return
	}
	c.run = run
	if uid, ok := ownerUID(filepath.Join(run.Dir, transcript.RecordName)); !ok || uid != os.Getuid() {
		c.act("skip", "run.json of '%s' is not owned by the current user", slug)
		return
	}
	if !c.stale() {
		return
	}
	c.objects(ctx)
	if c.skipped() {
		c.act("kept-worktree", "%s", dash(run.Record.Worktree))
		c.act("kept-run-dir", "%s", run.Dir)
		return
	}
	if !c.worktree(ctx) {
		c.keepStashes()
	}
	c.runDir()
}

// stale applies R-7's staleness rule, with the liveness lock as the test
// (and host_pid, checked to be the run's process, only for records of
// 0.9.1, which had no lock: see transcript.LegacyAlive).
func (c *cleaner) stale() bool {
	rec := &c.run.Record
	if c.run.Alive && rec.Status != transcript.StatusRunning {
		// Whatever the status says: a resume holds its prior run's lock.
		c.act("skip", "'%s' is in use (its liveness lock is held by a running process)", c.run.Slug)
		return false
	}
	if rec.Status != transcript.StatusRunning {
		return true
	}
	if !c.run.Alive && !transcript.HasLivenessFile(c.run.Dir) && rec.HostPID == nil {
		c.act("skip", "'%s' is recorded as running with no host_pid; it cannot be told dead", c.run.Slug)
		return false
	}
	if c.run.Alive {
		c.act("skip", "'%s' is still running (its host process is alive)", c.run.Slug)
		return false
	}
	if !c.opts.Force {
		c.act("skip", "'%s' is recorded as running with a dead host process; use --force to clean it", c.run.Slug)
		return false
	}
	return true
}

// objects removes the run's containers, then its volumes, when their
// labels match; a work volume whose tree never reached the worktree is
// exported first.
func (c *cleaner) objects(ctx context.Context) {
	rec := &c.run.Record
	want := map[string]string{docker.LabelRun: c.run.Slug}
	if rec.Repo != "" {
		want[docker.LabelRepo] = docker.RepoLabel(rec.Repo)
	}
	names := []string{}
	if n := Str(rec.Container); n != "" {
		names = append(names, n)
	}
	for _, n := range names {
		c.removeObject(ctx, "container", n, want, true)
	}
	extraC, extraV, _ := docker.RunObjectNames(c.run.Slug)
	if rec.Sandbox == "docker" {
		for _, n := range extraC {
			if n != Str(rec.Container) {
				c.removeObject(ctx, "container", n, want, false)
			}
		}
	}
	if c.skipped() {
		return
	}
	if v := Str(rec.Volume); v != "" {
		if !c.exportFirst(ctx, v, want) {
			return
		}
		c.removeObject(ctx, "volume", v, want, true)
	}
	if rec.Sandbox == "docker" {
		for _, n := range extraV {
			if n != Str(rec.Volume) {
				c.removeObject(ctx, "volume", n, want, false)
			}
		}
	}
}

// removeObject inspects and removes one container or volume; report says
// whether an absent one gets an action line.
func (c *cleaner) removeObject(ctx context.Context, kind, name string, want map[string]string, report bool) {
	inspect, remove := c.s.docker.ContainerLabels, c.s.docker.RemoveContainer
	if kind == "volume" {
		inspect, remove = c.s.docker.VolumeLabels, c.s.docker.RemoveVolume
	}
	labels, err := inspect(ctx, name)
	switch {
	case errors.Is(err, ErrObjectGone):
		if report {
			c.act("absent-"+kind, "%s", name)
		}
		if kind == "volume" {
			c.releaseStore(ctx, name)
		}
		return
	case err != nil:
		c.act("skip-"+kind, "%s: cannot inspect: %v", name, err)
		return
	}
	for k, v := range want {
		if labels[k] != v {
			c.act("skip-"+kind, "%s: labels do not match (not this run's)", name)
			return
		}
	}
	if c.opts.DryRun {
		c.act("remove-"+kind, "%s", name)
		return
	}
	if err := remove(ctx, name, want); err != nil {
		c.act("skip-"+kind, "%s: %v", name, err)
		return
	}
	c.act("removed-"+kind, "%s", name)
}

// releaseStore detaches and deletes the file system of a work volume that
// is gone (a run killed before it made its volume, or a volume removed by
// hand), when there is one; removing a volume releases its own.
func (c *cleaner) releaseStore(ctx context.Context, volume string) {
	if c.opts.DryRun {
		stores, _ := c.s.docker.VolumeStores(ctx)
		for _, st := range stores {
			if st.Volume == volume {
				c.act("remove-volume-store", "%s", st.Image)
			}
		}
		return
	}
	released, err := c.s.docker.ReleaseVolumeStore(ctx, volume)
	switch {
	case err != nil:
		c.act("skip-volume-store", "%s: %v", volume, err)
	case released:
		c.act("removed-volume-store", "%s (the file system of the volume)", volume)
	}
}

// exportFirst keeps a work volume's tree: unless the run's record says
// its export succeeded (export_status ok), the volume may hold the only
// copy of the work, so it is exported into the worktree (the validated
// export) before it may go. A crashed run's lane holds only what the
// sandbox wrote (the base tree, a partial export): when the export refuses
// it, it is reduced to its .git file and the export tried once more.
// False means the volume must stay.
func (c *cleaner) exportFirst(ctx context.Context, volume string, want map[string]string) bool {
	rec := &c.run.Record
	if rec.ExportStatus == "ok" || rec.Worktree == "" {
		return true
	}
	labels, err := c.s.docker.VolumeLabels(ctx, volume)
	if err != nil || labels[docker.LabelRun] != want[docker.LabelRun] {
		return true // absent, or not ours: removeObject says so
	}
	if c.opts.DryRun {
		c.act("export-volume", "%s into %s (the record has no successful export)", volume, rec.Worktree)
		return true
	}
	opts := ExportOptions{KeepVolume: true, DefaultImage: c.s.defaultImage, RunsRoot: c.s.root}
	res, err := c.s.export(ctx, c.run.Slug, opts)
	if (err != nil || res == nil || !res.OK) && c.run.Crashed() && !onlyGitFile(rec.Worktree) {
		if cerr := export.Clear(rec.Worktree); cerr == nil {
			c.act("cleared-worktree", "%s (the crashed run's own partial copy; the volume holds the whole tree)", rec.Worktree)
			res, err = c.s.export(ctx, c.run.Slug, opts)
		}
	}
	if err != nil || res == nil || !res.OK {
		reason := "export failed"
		if err != nil {
			reason = err.Error()
		} else if res != nil {
			reason = res.Status
		}
		if !c.opts.Force || err != nil {
			c.act("skip-volume", "%s: the record has no successful export and the volume cannot be exported (%s); kept%s",
				volume, reason, map[bool]string{true: "", false: " (--force parks what of it can be written, then removes it)"}[c.opts.Force])
			return false
		}
		return c.salvage(ctx, volume, reason, opts)
	}
	c.act("exported-volume", "%s into %s", volume, rec.Worktree)
	return true
}

// salvage keeps what can be kept of a volume whose tree the export
// refuses as a whole (a member it will not write), for --force: every
// member the export would write on its own goes into the worktree, to be
// parked with the rest of the run's work, and the members that made the
// export refuse are listed as not parked. False (the volume stays) when
// the volume could not be read at all.
func (c *cleaner) salvage(ctx context.Context, volume, reason string, opts ExportOptions) bool {
	rec := &c.run.Record
	sv, err := c.s.salvage(ctx, c.run.Slug, opts)
	if err != nil {
		c.act("skip-volume", "%s: the export refused it (%s), and nothing of it could be salvaged (%v); kept", volume, reason, err)
		return false
	}
	c.act("salvaged-volume", "%s into %s to be parked: %d entries, %d bytes (the export refused the whole tree: %s)",
		volume, rec.Worktree, sv.Entries, sv.Bytes, reason)
	for _, l := range sv.LeftOut {
		c.act("not-parked", "%s: %s", l.Name, l.Reason)
	}
	if more := sv.LeftOutCount - len(sv.LeftOut); more > 0 {
		c.act("not-parked", "%d more entries of %s", more, volume)
	}
	for _, d := range sv.Dropped {
		c.act("not-parked", "%s: a .git entry or repository (moved to %s, or left out)", d, filepath.Join(c.run.Dir, "quarantine"))
	}
	for _, d := range sv.Skipped {
		c.act("not-parked", "%s: a FIFO or device", d)
	}
	return true
}

// worktree removes the run's worktree and branch (R-7 step 5), parking
// work first under --force. It reports whether the worktree was removed.
func (c *cleaner) worktree(ctx context.Context) bool {
	rec := &c.run.Record
	if rec.Worktree == "" || rec.Repo == "" {
		return false
	}
	if Str(rec.ResumedBy) != "" {
		c.act("kept-worktree", "%s (run '%s' resumed it and owns it now)", rec.Worktree, Str(rec.ResumedBy))
		return false
	}
	repo, err := c.s.git.ResolveRepo(ctx, rec.Repo)
	if err != nil {
		c.act("skip-worktree", "%s: its repository cannot be read: %v", rec.Worktree, err)
		return false
	}
	if _, err := os.Lstat(rec.Worktree); errors.Is(err, os.ErrNotExist) {
		return c.worktreeGone(ctx, repo)
	}
	l, err := c.s.openLane(ctx, c.run)
	if err != nil {
		c.act("skip-worktree", "%v", err)
		return false
	}
	if !c.quarantineCrashed() {
		return false
	}
	// A pre-resume stash beside the worktree is the run's work as much as
	// the worktree is: parked below the worktree's own, and only with it.
	from := l.tip
	if from == "" {
		from = rec.BaseCommit
	}
	stashes := c.stashList()
	head, stashWork, err := c.s.stashChain(ctx, c.run, repo, from, stashes)
	if err != nil {
		c.act("skip-worktree", "%s: %v", rec.Worktree, err)
		return false
	}
	park, dirty, err := c.s.snapshotForPark(ctx, c.run, l, head)
	if err != nil {
		c.act("skip-worktree", "%s: cannot tell whether it is clean: %v", rec.Worktree, err)
		return false
	}
	ahead := 0
	if l.tip != "" {
		if ahead, err = c.s.git.UnmergedCommits(ctx, repo.Root, rec.Branch, l.tip); err != nil {
			c.act("skip-worktree", "%s: cannot count its commits beyond the base: %v", rec.Worktree, err)
			return false
		}
	}
	if !c.opts.Force && dirty {
		c.act("skip-worktree", "%s has uncommitted changes (accept the run, or --force to park them under %s)", rec.Worktree, ParkedRef(c.run.Slug))
		return false
	}
	if !c.opts.Force && ahead > 0 {
		c.act("skip-worktree", "%s: branch %s has %d commits beyond its base merged nowhere (merge it, or --force to park them under %s)", rec.Worktree, rec.Branch, ahead, ParkedRef(c.run.Slug))
		return false
	}
	if !c.opts.Force && len(stashWork) > 0 {
		c.act("skip-worktree", "%s: the pre-resume stash %s beside it holds work from before a resume (move it back into the worktree, or --force to park it under %s)",
			rec.Worktree, strings.Join(stashWork, ", "), ParkedRef(c.run.Slug))
		return false
	}
	if dirty || ahead > 0 || len(stashWork) > 0 {
		if !c.parkWork(ctx, repo.Root, park) {
			return false
		}
	}
	checkedOut := ""
	if wts, err := c.s.git.Worktrees(ctx, repo.Root); err == nil {
		for _, wt := range wts {
			if resolved(wt.Path) == l.worktree {
				checkedOut = strings.TrimPrefix(wt.Branch, "refs/heads/")
			}
		}
	}
	if c.opts.DryRun {
		c.act("remove-worktree", "%s", rec.Worktree)
	} else {
		if _, err := c.s.git.Run(ctx, gitops.Call{Dir: repo.Root, Neutral: true, Args: []string{"worktree", "remove", "--force", l.worktree}}); err != nil {
			c.act("skip-worktree", "%s: %v", rec.Worktree, err)
			return false
		}
		c.act("removed-worktree", "%s", rec.Worktree)
	}
	c.removeStashes(stashes, stashWork)
	if checkedOut != rec.Branch {
		c.act("skip-branch", "%s: the worktree had %s checked out; left alone", rec.Branch, dash(checkedOut))
	} else {
		c.deleteBranch(ctx, repo.Root, l.tip)
	}
	c.forgetLane(ctx, repo)
	return true
}

// quarantineCrashed moves the worker's repositories out of the tree of
// a host run that died before its finalize (QuarantineCrashedTree)
// before the tree is parked. It reports whether cleaning may go on.
func (c *cleaner) quarantineCrashed() bool {
	moved, err := c.s.quarantineCrashed(c.run)
	if err != nil {
		c.act("skip-worktree", "%s: %v", c.run.Record.Worktree, err)
		return false
	}
	if len(moved) > 0 {
		c.act("quarantined", "%s (into %s)", strings.Join(moved, ", "), filepath.Join(c.run.Dir, "quarantine"))
	}
	return true
}

// quarantineCrashed is QuarantineCrashedTree for run, read afresh.
func (s *Store) quarantineCrashed(run *Run) ([]string, error) {
	if run.Record.Status != transcript.StatusRunning || run.Record.Sandbox == "docker" {
		return nil, nil
	}
	rf, err := transcript.ReadRun(run.Dir)
	if err != nil {
		return nil, err
	}
	return QuarantineCrashedTree(run.Dir, rf.Record)
}

// worktreeGone handles a worktree deleted by hand: prune, and delete the
// branch if it is ours and nothing has it out (its commits parked first).
func (c *cleaner) worktreeGone(ctx context.Context, repo gitops.Repo) bool {
	rec := &c.run.Record
	if !c.opts.DryRun {
		_, _ = c.s.git.Run(ctx, gitops.Call{Dir: repo.Root, Args: []string{"worktree", "prune"}})
	}
	c.act("absent-worktree", "%s", rec.Worktree)
	ours := strings.HasPrefix(rec.Branch, "dirtywork/")
	tip := ""
	if ours {
		if t, ok, err := c.s.git.RefTip(ctx, repo.Root, "refs/heads/"+rec.Branch); err == nil && ok {
			tip = t
		}
	}
	c.parkOrphanStashes(ctx, repo, tip)
	if !ours || tip == "" {
		return true
	}
	if wts, err := c.s.git.Worktrees(ctx, repo.Root); err != nil {
		return true
	} else {
		for _, wt := range wts {
			if wt.Branch == "refs/heads/"+rec.Branch {
				return true // checked out elsewhere: not ours to delete
			}
		}
	}
	if ahead, err := c.s.git.UnmergedCommits(ctx, repo.Root, rec.Branch, tip); err != nil || ahead > 0 {
		if !c.parkWork(ctx, repo.Root, tip) {
			return true
		}
	}
	c.deleteBranch(ctx, repo.Root, tip)
	c.forgetLane(ctx, repo)
	return true
}

func (c *cleaner) parkWork(ctx context.Context, repo, commit string) bool {
	if c.opts.DryRun {
		c.act("park", "%s", ParkedRef(c.run.Slug))
		c.res.Parked = ParkedRef(c.run.Slug)
		return true
	}
	how, err := c.s.park(ctx, repo, c.run.Slug, commit)
	if err != nil {
		c.act("skip-worktree", "%v", err)
		return false
	}
	c.act("parked", "%s", how)
	c.res.Parked = ParkedRef(c.run.Slug)
	if _, err := transcript.Patch(c.run.Dir, transcript.ParkedFields{ParkedRef: c.res.Parked}); err != nil {
		// The work is parked all the same; the line above names the ref.
		c.act("unrecorded", "run.json does not name %s: %v", c.res.Parked, err)
	}
	return true
}

func (c *cleaner) deleteBranch(ctx context.Context, repo, tip string) {
	branch := c.run.Record.Branch
	if tip == "" {
		return
	}
	if c.opts.DryRun {
		c.act("remove-branch", "%s", branch)
		return
	}
	if err := c.s.git.UpdateRef(ctx, repo, "refs/heads/"+branch, "", tip, "dirtywork clean "+c.run.Slug); err != nil {
		c.act("skip-branch", "%s: %v", branch, err)
		return
	}
	c.act("removed-branch", "%s", branch)
}

// forgetLane drops lanes git no longer knows from the lane manifest.
func (c *cleaner) forgetLane(ctx context.Context, repo gitops.Repo) {
	if c.opts.DryRun {
		return
	}
	_, _ = gitops.NewManager(c.s.git, repo).Recover(ctx)
}

// stashList is the pre-resume stashes beside the run's worktree that are
// directories (anything else of that name is no stash of ours: left alone).
func (c *cleaner) stashList() []string {
	wt := c.run.Record.Worktree
	if wt == "" {
		return nil
	}
	all, _ := PreResumeStashes(wt)
	var out []string
	for _, st := range all {
		if fi, err := os.Lstat(st); err == nil && fi.IsDir() {
			out = append(out, st)
		}
	}
	return out
}

// keepStashes says that every pre-resume stash beside a worktree that was
// not removed stays (R-7 step 6's kept-stash; 0.9.1's words): it may hold
// the only copy of the work from before a resume, and it goes, parked,
// only with its worktree.
func (c *cleaner) keepStashes() {
	for _, st := range c.stashList() {
		c.act("kept-stash", "%s: kept -- worktree was not removed", st)
	}
}

// removeStashes removes the stashes beside a worktree that was removed
// (withWork were parked with it).
func (c *cleaner) removeStashes(stashes, withWork []string) {
	for _, st := range stashes {
		if c.opts.DryRun {
			c.act("remove-stash", "%s", st)
			continue
		}
		if err := os.RemoveAll(st); err != nil {
			c.act("skip-stash", "%s: %v", st, err)
			continue
		}
		if slices.Contains(withWork, st) {
			c.act("removed-stash", "%s (its work is parked under %s)", st, ParkedRef(c.run.Slug))
		} else {
			c.act("removed-stash", "%s (it held nothing that is not on the branch or parked)", st)
		}
	}
}

// parkOrphanStashes parks and removes the stashes beside a worktree
// deleted by hand: nothing else holds their work, so, as the branch's
// commits, they are parked without --force. tip is the branch's commit,
// "" when it is gone (the chain then starts at the base commit).
func (c *cleaner) parkOrphanStashes(ctx context.Context, repo gitops.Repo, tip string) {
	stashes := c.stashList()
	if len(stashes) == 0 {
		return
	}
	from := tip
	if from == "" {
		from = c.run.Record.BaseCommit
	}
	head, withWork, err := c.s.stashChain(ctx, c.run, repo, from, stashes)
	if err != nil {
		for _, st := range stashes {
			c.act("skip-stash", "%s: kept: %v", st, err)
		}
		return
	}
	if len(withWork) > 0 && !c.parkWork(ctx, repo.Root, head) {
		c.keepStashes()
		return
	}
	c.removeStashes(stashes, withWork)
}

// runDir removes the run dir, or keeps run.json and the transcript.
func (c *cleaner) runDir() {
	if c.skipped() {
		c.act("kept-run-dir", "%s", c.run.Dir)
		return
	}
	if c.opts.DryRun {
		c.act("remove-rundir", "%s", c.run.Dir)
		return
	}
	if c.opts.KeepTranscript {
		entries, err := os.ReadDir(c.run.Dir)
		if err != nil {
			c.act("skip-rundir", "%s: %v", c.run.Dir, err)
			return
		}
		for _, e := range entries {
			switch e.Name() {
			case transcript.RecordName, transcript.TranscriptName, ".run.json.lock":
				continue
			}
			if err := os.RemoveAll(filepath.Join(c.run.Dir, e.Name())); err != nil {
				c.act("skip-rundir", "%s: %v", e.Name(), err)
				return
			}
		}
		c.act("kept-transcript", "%s", c.run.Dir)
		return
	}
	parked := c.res.Parked
	if parked == "" {
		parked = c.run.Record.ParkedRef
	}
	// Best effort: without it a second clean says "no such run", as 0.9.1's did.
	_ = c.s.markCleaned(c.run.Slug, c.run.Dir, parked)
	if err := os.RemoveAll(c.run.Dir); err != nil {
		c.act("skip-rundir", "%s: %v", c.run.Dir, err)
		return
	}
	c.act("removed-rundir", "%s", c.run.Dir)
}

func ownerUID(path string) (int, bool) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
