package runs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
	"github.com/dirtywork/dirtywork/sandbox/host"
	"github.com/dirtywork/dirtywork/transcript"
)

// ReconcileOptions tune Reconcile.
type ReconcileOptions struct {
	// DryRun lists the orphans and what would happen, changing nothing.
	DryRun bool
	// Repos are repositories to look at besides those the runs name.
	Repos []string
}

// Orphan is something a crash (or a person) left behind.
type Orphan struct {
	// Kind: crashed-run, container, volume, volume-store (a work volume's
	// file system), reap-marker, worktree, lane, directory.
	Kind string `json:"kind"`
	// Name is the object: a slug, a container or volume name, a path, a
	// lane id.
	Name string `json:"name"`
	// Slug is the run it belongs to ("" when none is known).
	Slug string `json:"slug"`
	// Action is what reconcile does (or, dry, would do) to it:
	// "clean" (the run's leftovers, work parked first), "remove",
	// "reap" (a reap marker that emptied its volumes, and them), "retry"
	// (a reap marker that did not, started again), "prune", or "report"
	// (left alone for a person).
	Action string `json:"action"`
	// Detail says why.
	Detail string `json:"detail"`
}

// ReconcileReport is what Reconcile found and did.
type ReconcileReport struct {
	Orphans []Orphan `json:"orphans"`
	// Cleaned are the cleanups of crashed runs, action by action.
	Cleaned []*CleanResult `json:"cleaned"`
	// Removed and Failed are objects removed, and steps that failed.
	Removed []string `json:"removed"`
	Failed  []string `json:"failed"`
	// Notes are things not looked at that needed no look: the docker
	// daemon out of reach where no run of the runs root used docker.
	Notes  []string `json:"notes"`
	DryRun bool     `json:"dry_run"`
}

// Reconcile joins run records, the lane manifests and `git worktree list`
// of the repositories they name (and opts.Repos), their .worktrees/
// directories, and the dirtywork-labelled containers and volumes; lists
// every orphan with what will happen to it; then cleans what is safe. A
// crashed run (recorded as running, its liveness lock free) is cleaned
// like `runs clean --force --keep-transcript`: its work parked, its record
// kept. A container of a finished or unknown run is removed; a tools
// volume too; a work volume without a record, lanes of other engines and
// unknown worktrees or directories are only reported. It never touches a
// live run, and judges only objects labelled with a repository it looks
// at (a run of another runs root has no record here and may be alive).
func (s *Store) Reconcile(ctx context.Context, opts ReconcileOptions) (*ReconcileReport, error) {
	rc := &reconciliation{
		s: s, rep: &ReconcileReport{Orphans: []Orphan{}, Cleaned: []*CleanResult{}, Removed: []string{}, Failed: []string{}, Notes: []string{}, DryRun: opts.DryRun},
		bySlug: map[string]*Run{}, repos: map[string]bool{}, crashed: map[string]bool{}, ours: map[string]bool{},
		reapVols: map[string]string{}, emptying: map[string]bool{},
	}
	if err := rc.listRuns(ctx, opts.Repos); err != nil {
		return nil, err
	}
	rc.crashedRuns()
	rc.listDocker(ctx)
	rc.reapMarkers()
	rc.containers()
	rc.volumes()
	rc.volumeStores(ctx)
	rc.repositories(ctx)
	sort.SliceStable(rc.rep.Orphans, func(i, j int) bool { return rc.rep.Orphans[i].Kind < rc.rep.Orphans[j].Kind })
	if !opts.DryRun {
		rc.act(ctx)
		rc.tempDirs()
	}
	return rc.rep, nil
}

// tempDirs removes what killed runs left in the temporary directory: the
// host worker repositories and docker base packs whose owner lock is free
// (their run is gone). A live run holds its lock, and keeps them.
func (rc *reconciliation) tempDirs() {
	tmp := os.TempDir()
	rc.rep.Removed = append(rc.rep.Removed, host.SweepStaleRepos(tmp)...)
	rc.rep.Removed = append(rc.rep.Removed, workspace.SweepStalePacks(tmp)...)
}

// reconciliation is one Reconcile, in phases: what the runs root and the
// repositories hold, what docker holds, each kind of leftover judged, then
// the actions.
type reconciliation struct {
	s      *Store
	rep    *ReconcileReport
	list   []*Run
	bySlug map[string]*Run
	repos  map[string]bool // the repositories looked at, resolved
	// crashed are the runs whose own cleanup takes their leftovers.
	crashed map[string]bool
	// ours are the repository labels of the repositories looked at.
	ours      map[string]bool
	cs        []docker.Labelled
	vs        []docker.Labelled
	dockerErr error
	// reapVols are the volumes an exited reap marker names, with its run's
	// slug; emptying those a marker still works on.
	reapVols map[string]string
	emptying map[string]bool
}

// listRuns reads the runs root and resolves the repositories to look at.
func (rc *reconciliation) listRuns(ctx context.Context, extra []string) error {
	list, err := rc.s.List(ctx, ListOptions{Leftovers: true})
	if err != nil {
		return err
	}
	rc.list = list
	for _, r := range list {
		rc.bySlug[r.Slug] = r
		if r.Err == nil && r.Record.Repo != "" {
			rc.repos[resolved(r.Record.Repo)] = true
		}
	}
	for _, r := range extra {
		repo, err := rc.s.git.ResolveRepo(ctx, r)
		if err != nil {
			return fmt.Errorf("reconcile %s: %w", r, err)
		}
		rc.repos[repo.Root] = true
	}
	return nil
}

// crashedRuns come first: their cleanup takes their objects with them.
func (rc *reconciliation) crashedRuns() {
	for _, r := range rc.list {
		if r.Err != nil || !r.Crashed() || !hasLeftovers(r) {
			continue
		}
		rc.crashed[r.Slug] = true
		rc.rep.Orphans = append(rc.rep.Orphans, Orphan{
			Kind: "crashed-run", Name: r.Slug, Slug: r.Slug, Action: "clean",
			Detail: "recorded as running, its process is gone: leftovers removed, work parked under " + ParkedRef(r.Slug) + ", record kept",
		})
	}
}

// listDocker lists the labelled containers and volumes. Only objects of
// the repositories looked at are ours to judge: a run of another runs
// root (another DIRTYWORK_HOME) has no record here and may well be alive.
func (rc *reconciliation) listDocker(ctx context.Context) {
	for repo := range rc.repos {
		rc.ours[docker.RepoLabel(repo)] = true
	}
	rc.cs, rc.vs, rc.dockerErr = rc.s.docker.ListLabelled(ctx)
	switch {
	case rc.dockerErr == nil:
	case rc.anyDockerRun():
		rc.rep.Failed = append(rc.rep.Failed, "docker: "+rc.dockerErr.Error())
	default:
		// A host-mode user without a daemon: nothing of docker's can be
		// theirs, and reconcile did all it had to.
		rc.rep.Notes = append(rc.rep.Notes, "docker: not looked at, no run here used it ("+rc.dockerErr.Error()+")")
	}
}

// anyDockerRun reports whether a run of the runs root used (or may have
// used: its record unreadable) the docker sandbox.
func (rc *reconciliation) anyDockerRun() bool {
	for _, r := range rc.list {
		if r.Err != nil || r.Record.Sandbox != "none" {
			return true
		}
	}
	return false
}

// live reports a run that is alive, or recorded as running (a crash the
// run's own cleanup handles).
func (rc *reconciliation) live(slug string) bool {
	run := rc.bySlug[slug]
	return run != nil && (run.Alive || run.Record.Status == transcript.StatusRunning)
}

// reapMarkers judges the reap markers. They stand for volume removals a finished run handed off
// after its export succeeded: once a marker has exited 0 (its volume
// emptied), it and the volumes it names that carry its run's label
// go. One still running is emptying its volume; the next reaper takes
// it. One that exited otherwise, or never ran, left the volume as it
// was: it runs again.
func (rc *reconciliation) reapMarkers() {
	for _, c := range rc.cs {
		names, ok := c.Labels[docker.LabelReap]
		if !ok || !rc.ours[c.Labels[docker.LabelRepo]] || c.Run() == "" {
			continue
		}
		running := c.State == "running" || c.State == "restarting" || c.State == "paused"
		done := c.ReapDone
		for _, v := range strings.Split(names, ",") {
			switch {
			case v == "":
			case done:
				rc.reapVols[v] = c.Run()
			default:
				rc.emptying[v] = true
			}
		}
		o := Orphan{
			Kind: "reap-marker", Name: c.Name, Slug: c.Run(), Action: "reap",
			Detail: "a finished run's handed-off volume removal (" + names + "): the marker and those volumes go",
		}
		switch {
		case running:
			o.Action, o.Detail = "report", "a finished run's volume removal in progress (the marker is "+c.State+"): the next reconcile or run finishes it"
		case !done:
			o.Action, o.Detail = "retry", "a finished run's volume removal that did not empty its volume (the marker is "+c.State+
				", not with exit code 0): the marker runs again, and the next reconcile or run finishes it"
		}
		rc.rep.Orphans = append(rc.rep.Orphans, o)
	}
}

// containers judges the run containers.
func (rc *reconciliation) containers() {
	for _, c := range rc.cs {
		slug := c.Run()
		run := rc.bySlug[slug]
		switch {
		case !rc.ours[c.Labels[docker.LabelRepo]]:
			continue
		case c.Labels[docker.LabelReap] != "":
			continue // a reap marker, judged above
		case rc.crashed[slug]:
			continue
		case rc.live(slug):
			continue // live, or a crash the run's own cleanup handles
		}
		o := Orphan{Kind: "container", Name: c.Name, Slug: slug, Action: "remove", Detail: "container of a finished run"}
		if run == nil {
			o.Detail = "container of a run with no record"
			if c.State == "running" || c.State == "restarting" || c.State == "paused" {
				o.Action, o.Detail = "report", "a running container of a run with no record here (another runs root?): reported only"
			}
		}
		rc.rep.Orphans = append(rc.rep.Orphans, o)
	}
}

// volumes judges the run volumes.
func (rc *reconciliation) volumes() {
	for _, v := range rc.vs {
		slug := v.Run()
		run := rc.bySlug[slug]
		reap := slug != "" && rc.reapVols[v.Name] == slug
		if !rc.ours[v.Labels[docker.LabelRepo]] || rc.emptying[v.Name] {
			continue // not ours, or its marker is still emptying it
		}
		if !reap && (rc.crashed[slug] || rc.live(slug)) {
			continue
		}
		_, vols, _ := docker.RunObjectNames(slug)
		tools := len(vols) == 2 && v.Name == vols[1]
		switch {
		case reap:
			rc.rep.Orphans = append(rc.rep.Orphans, Orphan{
				Kind: "volume", Name: v.Name, Slug: slug, Action: "remove",
				Detail: "handed off by its run's reap marker: the run's export had succeeded",
			})
		case tools:
			rc.rep.Orphans = append(rc.rep.Orphans, Orphan{
				Kind: "volume", Name: v.Name, Slug: slug, Action: "remove",
				Detail: "tools volume of a run that has ended (the tool server and base objects, no work)",
			})
		case run == nil:
			rc.rep.Orphans = append(rc.rep.Orphans, Orphan{
				Kind: "volume", Name: v.Name, Slug: slug, Action: "report",
				Detail: "work volume with no run record: it may hold the only copy of a run's work",
			})
		default:
			rc.rep.Orphans = append(rc.rep.Orphans, Orphan{
				Kind: "volume", Name: v.Name, Slug: slug, Action: "report",
				Detail: "work volume a finished run kept: 'dirtywork runs export " + slug + "' brings its tree out, 'runs clean' removes it",
			})
		}
	}
}

// volumeStores judges the file systems of work volumes whose size the
// kernel held, which live in this home: one whose volume is gone (a run killed before it
// made its volume, a volume removed by hand) is removed with its
// loop devices, unless its run is alive (it is making the volume).
func (rc *reconciliation) volumeStores(ctx context.Context) {
	if rc.dockerErr != nil {
		return
	}
	present := map[string]bool{}
	for _, v := range rc.vs {
		present[v.Name] = true
	}
	stores, err := rc.s.docker.VolumeStores(ctx)
	if err != nil {
		rc.rep.Failed = append(rc.rep.Failed, "volume stores: "+err.Error())
	}
	for _, st := range stores {
		slug := strings.TrimSuffix(strings.TrimPrefix(st.Volume, "dw-"), "-work")
		if present[st.Volume] || rc.crashed[slug] || (rc.bySlug[slug] != nil && rc.bySlug[slug].Alive) {
			continue // the volume's own removal takes it, or its run's cleanup
		}
		detail := "the file system of a work volume that no longer exists"
		if len(st.Devices) > 0 {
			detail += " (attached to " + strings.Join(st.Devices, ", ") + ")"
		}
		rc.rep.Orphans = append(rc.rep.Orphans, Orphan{Kind: "volume-store", Name: st.Volume, Slug: slug, Action: "remove", Detail: detail + ": " + st.Image})
	}
}

// repositories judges the lanes, worktrees and .worktrees/ directories
// of the repositories looked at.
func (rc *reconciliation) repositories(ctx context.Context) {
	known := map[string]bool{} // resolved worktree paths of runs
	for _, r := range rc.list {
		if r.Err == nil && r.Record.Worktree != "" {
			known[resolved(r.Record.Worktree)] = true
		}
	}
	for repo := range rc.repos {
		rc.s.reconcileRepo(ctx, repo, rc.bySlug, known, rc.rep)
	}
}

// act takes the actions the orphans call for. The markers go first: a container, exited or not, keeps the volumes
// it mounts in use. The volumes of a marker that could not be removed
// wait for the next reaper.
func (rc *reconciliation) act(ctx context.Context) {
	orphans := slices.Clone(rc.rep.Orphans)
	markerStays := map[string]bool{}
	sort.SliceStable(orphans, func(i, j int) bool { return orphans[i].Action == "reap" && orphans[j].Action != "reap" })
	for _, o := range orphans {
		if slug := rc.reapVols[o.Name]; o.Kind == "volume" && slug != "" && markerStays[slug] {
			continue
		}
		switch o.Action {
		case "reap":
			if err := rc.s.docker.RemoveContainer(ctx, o.Name, map[string]string{docker.LabelRun: o.Slug}); err != nil {
				markerStays[o.Slug] = true
				rc.rep.Failed = append(rc.rep.Failed, fmt.Sprintf("%s %s: %v", o.Kind, o.Name, err))
			} else {
				rc.rep.Removed = append(rc.rep.Removed, o.Name)
			}
		case "retry":
			if err := rc.s.docker.StartContainer(ctx, o.Name, map[string]string{docker.LabelRun: o.Slug}); err != nil {
				rc.rep.Failed = append(rc.rep.Failed, fmt.Sprintf("%s %s: %v", o.Kind, o.Name, err))
			}
		case "clean":
			rc.rep.Cleaned = append(rc.rep.Cleaned, rc.s.Clean(ctx, o.Slug, CleanOptions{Force: true, KeepTranscript: true}))
		case "remove":
			if o.Kind == "volume-store" {
				if _, err := rc.s.docker.ReleaseVolumeStore(ctx, o.Name); err != nil {
					rc.rep.Failed = append(rc.rep.Failed, fmt.Sprintf("%s %s: %v", o.Kind, o.Name, err))
				} else {
					rc.rep.Removed = append(rc.rep.Removed, o.Name+" (file system)")
				}
				continue
			}
			want := map[string]string{docker.LabelRun: o.Slug}
			remove := rc.s.docker.RemoveContainer
			if o.Kind == "volume" {
				remove = rc.s.docker.RemoveVolume
			}
			if err := remove(ctx, o.Name, want); err != nil {
				rc.rep.Failed = append(rc.rep.Failed, fmt.Sprintf("%s %s: %v", o.Kind, o.Name, err))
			} else {
				rc.rep.Removed = append(rc.rep.Removed, o.Name)
			}
		case "prune":
			if _, err := rc.s.git.Run(ctx, gitops.Call{Dir: o.Name, Args: []string{"worktree", "prune"}}); err != nil {
				rc.rep.Failed = append(rc.rep.Failed, fmt.Sprintf("prune %s: %v", o.Name, err))
			}
		}
	}
}

// reconcileRepo looks at one repository's lanes, worktrees and
// .worktrees/ directories.
func (s *Store) reconcileRepo(ctx context.Context, root string, bySlug map[string]*Run, known map[string]bool, rep *ReconcileReport) {
	repo, err := s.git.ResolveRepo(ctx, root)
	if err != nil {
		rep.Failed = append(rep.Failed, fmt.Sprintf("repository %s: %v", root, err))
		return
	}
	lanes, err := gitops.NewManager(s.git, repo).List(ctx)
	if err != nil {
		rep.Failed = append(rep.Failed, fmt.Sprintf("lanes of %s: %v", repo.Root, err))
	}
	laneWts := map[string]bool{}
	for _, l := range lanes {
		laneWts[resolved(l.Worktree)] = true
		run := bySlug[l.ID]
		if run != nil && run.Err == nil && resolved(run.Record.Worktree) == resolved(l.Worktree) {
			continue // a run's lane: the run's own state decides
		}
		detail := "lane opened through 'dirtywork lane' by another engine: reported only"
		if !l.WorktreeExists {
			detail += " (its worktree is gone; 'dirtywork lane recover' forgets it)"
		}
		rep.Orphans = append(rep.Orphans, Orphan{Kind: "lane", Name: l.ID, Action: "report", Detail: detail + " [" + l.Worktree + "]"})
	}
	wts, err := s.git.Worktrees(ctx, repo.Root)
	if err != nil {
		rep.Failed = append(rep.Failed, err.Error())
		return
	}
	gitKnows := map[string]bool{}
	prunable := false
	for _, wt := range wts {
		p := resolved(wt.Path)
		gitKnows[p] = true
		if wt.Prunable {
			prunable = true
			continue
		}
		if filepath.Dir(p) != filepath.Join(repo.Root, ".worktrees") || known[p] || laneWts[p] {
			continue
		}
		rep.Orphans = append(rep.Orphans, Orphan{
			Kind: "worktree", Name: wt.Path, Action: "report",
			Detail: "a worktree under .worktrees/ that no run or lane records",
		})
	}
	if prunable {
		rep.Orphans = append(rep.Orphans, Orphan{
			Kind: "worktree", Name: repo.Root, Action: "prune",
			Detail: "git lists worktrees whose directories are gone ('git worktree prune')",
		})
	}
	entries, _ := os.ReadDir(filepath.Join(repo.Root, ".worktrees"))
	for _, e := range entries {
		p := filepath.Join(repo.Root, ".worktrees", e.Name())
		if !e.IsDir() || gitKnows[resolved(p)] || strings.Contains(e.Name(), ".pre-resume-") {
			continue
		}
		rep.Orphans = append(rep.Orphans, Orphan{
			Kind: "directory", Name: p, Action: "report",
			Detail: "a directory git does not know as a worktree: look at it, then remove it by hand",
		})
	}
}

// hasLeftovers reports a run with anything left outside its run dir.
func hasLeftovers(r *Run) bool {
	l := r.Leftovers
	if l == nil {
		return true
	}
	return l.Worktree == Present || l.Branch == Present || l.Container != "" || l.Volume == Present || len(l.OtherObjects) > 0 ||
		(r.Record.Worktree != "" && l.Worktree == Unknown)
}
