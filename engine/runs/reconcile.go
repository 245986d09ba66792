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
	DryRun  bool     `json:"dry_run"`
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
	rep := &ReconcileReport{Orphans: []Orphan{}, Cleaned: []*CleanResult{}, Removed: []string{}, Failed: []string{}, DryRun: opts.DryRun}
	list, err := s.List(ctx, ListOptions{Leftovers: true})
	if err != nil {
		return nil, err
	}
	bySlug := map[string]*Run{}
	repos := map[string]bool{}
	for _, r := range list {
		bySlug[r.Slug] = r
		if r.Err == nil && r.Record.Repo != "" {
			repos[resolved(r.Record.Repo)] = true
		}
	}
	for _, r := range opts.Repos {
		repo, err := s.git.ResolveRepo(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("reconcile %s: %w", r, err)
		}
		repos[repo.Root] = true
	}

	// Crashed runs first: their cleanup takes their objects with them.
	crashed := map[string]bool{}
	for _, r := range list {
		if r.Err != nil || !r.Crashed() || !hasLeftovers(r) {
			continue
		}
		crashed[r.Slug] = true
		rep.Orphans = append(rep.Orphans, Orphan{
			Kind: "crashed-run", Name: r.Slug, Slug: r.Slug, Action: "clean",
			Detail: "recorded as running, its process is gone: leftovers removed, work parked under " + ParkedRef(r.Slug) + ", record kept",
		})
	}

	// Only objects of the repositories looked at are ours to judge: a run
	// of another runs root (another DIRTYWORK_HOME) has no record here and
	// may well be alive.
	ours := map[string]bool{}
	for repo := range repos {
		ours[docker.RepoLabel(repo)] = true
	}
	cs, vs, derr := s.docker.ListLabelled(ctx)
	if derr != nil {
		rep.Failed = append(rep.Failed, "docker: "+derr.Error())
	}
	// Reap markers stand for volume removals a finished run handed off
	// after its export succeeded: once a marker has exited 0 (its volume
	// emptied), it and the volumes it names that carry its run's label
	// go. One still running is emptying its volume; the next reaper takes
	// it. One that exited otherwise, or never ran, left the volume as it
	// was: it runs again.
	reapVols := map[string]string{} // volume -> the slug of the exited marker naming it
	emptying := map[string]bool{}   // volumes a marker still works on
	for _, c := range cs {
		names, ok := c.Labels[docker.LabelReap]
		if !ok || !ours[c.Labels[docker.LabelRepo]] || c.Run() == "" {
			continue
		}
		running := c.State == "running" || c.State == "restarting" || c.State == "paused"
		done := c.ReapDone
		for _, v := range strings.Split(names, ",") {
			switch {
			case v == "":
			case done:
				reapVols[v] = c.Run()
			default:
				emptying[v] = true
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
		rep.Orphans = append(rep.Orphans, o)
	}
	for _, c := range cs {
		slug := c.Run()
		run := bySlug[slug]
		switch {
		case !ours[c.Labels[docker.LabelRepo]]:
			continue
		case c.Labels[docker.LabelReap] != "":
			continue // a reap marker, judged above
		case crashed[slug]:
			continue
		case run != nil && (run.Alive || run.Record.Status == transcript.StatusRunning):
			continue // live, or a crash the run's own cleanup handles
		}
		o := Orphan{Kind: "container", Name: c.Name, Slug: slug, Action: "remove", Detail: "container of a finished run"}
		if run == nil {
			o.Detail = "container of a run with no record"
			if c.State == "running" || c.State == "restarting" || c.State == "paused" {
				o.Action, o.Detail = "report", "a running container of a run with no record here (another runs root?): reported only"
			}
		}
		rep.Orphans = append(rep.Orphans, o)
	}
	for _, v := range vs {
		slug := v.Run()
		run := bySlug[slug]
		reap := slug != "" && reapVols[v.Name] == slug
		if !ours[v.Labels[docker.LabelRepo]] || emptying[v.Name] {
			continue // not ours, or its marker is still emptying it
		}
		if !reap && (crashed[slug] || (run != nil && (run.Alive || run.Record.Status == transcript.StatusRunning))) {
			continue
		}
		_, vols, _ := docker.RunObjectNames(slug)
		tools := len(vols) == 2 && v.Name == vols[1]
		switch {
		case reap:
			rep.Orphans = append(rep.Orphans, Orphan{
				Kind: "volume", Name: v.Name, Slug: slug, Action: "remove",
				Detail: "handed off by its run's reap marker: the run's export had succeeded",
			})
		case tools:
			rep.Orphans = append(rep.Orphans, Orphan{
				Kind: "volume", Name: v.Name, Slug: slug, Action: "remove",
				Detail: "tools volume of a run that has ended (the tool server and base objects, no work)",
			})
		case run == nil:
			rep.Orphans = append(rep.Orphans, Orphan{
				Kind: "volume", Name: v.Name, Slug: slug, Action: "report",
				Detail: "work volume with no run record: it may hold the only copy of a run's work",
			})
		default:
			rep.Orphans = append(rep.Orphans, Orphan{
				Kind: "volume", Name: v.Name, Slug: slug, Action: "report",
				Detail: "work volume a finished run kept: 'dirtywork runs export " + slug + "' brings its tree out, 'runs clean' removes it",
			})
		}
	}

	// The file systems of work volumes whose size the kernel held live
	// in this home: one whose volume is gone (a run killed before it
	// made its volume, a volume removed by hand) is removed with its
	// loop devices, unless its run is alive (it is making the volume).
	if derr == nil {
		present := map[string]bool{}
		for _, v := range vs {
			present[v.Name] = true
		}
		stores, err := s.docker.VolumeStores(ctx)
		if err != nil {
			rep.Failed = append(rep.Failed, "volume stores: "+err.Error())
		}
		for _, st := range stores {
			slug := strings.TrimSuffix(strings.TrimPrefix(st.Volume, "dw-"), "-work")
			if present[st.Volume] || crashed[slug] || (bySlug[slug] != nil && bySlug[slug].Alive) {
				continue // the volume's own removal takes it, or its run's cleanup
			}
			detail := "the file system of a work volume that no longer exists"
			if len(st.Devices) > 0 {
				detail += " (attached to " + strings.Join(st.Devices, ", ") + ")"
			}
			rep.Orphans = append(rep.Orphans, Orphan{Kind: "volume-store", Name: st.Volume, Slug: slug, Action: "remove", Detail: detail + ": " + st.Image})
		}
	}

	known := map[string]bool{} // resolved worktree paths of runs
	for _, r := range list {
		if r.Err == nil && r.Record.Worktree != "" {
			known[resolved(r.Record.Worktree)] = true
		}
	}
	for repo := range repos {
		s.reconcileRepo(ctx, repo, bySlug, known, rep)
	}
	sort.SliceStable(rep.Orphans, func(i, j int) bool { return rep.Orphans[i].Kind < rep.Orphans[j].Kind })

	if opts.DryRun {
		return rep, nil
	}
	// The markers go first: a container, exited or not, keeps the volumes
	// it mounts in use. The volumes of a marker that could not be removed
	// wait for the next reaper.
	orphans := slices.Clone(rep.Orphans)
	markerStays := map[string]bool{}
	sort.SliceStable(orphans, func(i, j int) bool { return orphans[i].Action == "reap" && orphans[j].Action != "reap" })
	for _, o := range orphans {
		if slug := reapVols[o.Name]; o.Kind == "volume" && slug != "" && markerStays[slug] {
			continue
		}
		switch o.Action {
		case "reap":
			if err := s.docker.RemoveContainer(ctx, o.Name, map[string]string{docker.LabelRun: o.Slug}); err != nil {
				markerStays[o.Slug] = true
				rep.Failed = append(rep.Failed, fmt.Sprintf("%s %s: %v", o.Kind, o.Name, err))
			} else {
				rep.Removed = append(rep.Removed, o.Name)
			}
		case "retry":
			if err := s.docker.StartContainer(ctx, o.Name, map[string]string{docker.LabelRun: o.Slug}); err != nil {
				rep.Failed = append(rep.Failed, fmt.Sprintf("%s %s: %v", o.Kind, o.Name, err))
			}
		case "clean":
			rep.Cleaned = append(rep.Cleaned, s.Clean(ctx, o.Slug, CleanOptions{Force: true, KeepTranscript: true}))
		case "remove":
			if o.Kind == "volume-store" {
				if _, err := s.docker.ReleaseVolumeStore(ctx, o.Name); err != nil {
					rep.Failed = append(rep.Failed, fmt.Sprintf("%s %s: %v", o.Kind, o.Name, err))
				} else {
					rep.Removed = append(rep.Removed, o.Name+" (file system)")
				}
				continue
			}
			want := map[string]string{docker.LabelRun: o.Slug}
			remove := s.docker.RemoveContainer
			if o.Kind == "volume" {
				remove = s.docker.RemoveVolume
			}
			if err := remove(ctx, o.Name, want); err != nil {
				rep.Failed = append(rep.Failed, fmt.Sprintf("%s %s: %v", o.Kind, o.Name, err))
			} else {
				rep.Removed = append(rep.Removed, o.Name)
			}
		case "prune":
			if _, err := s.git.Run(ctx, gitops.Call{Dir: o.Name, Args: []string{"worktree", "prune"}}); err != nil {
				rep.Failed = append(rep.Failed, fmt.Sprintf("prune %s: %v", o.Name, err))
			}
		}
	}
	return rep, nil
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
