package seal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// Baseline is what a seal judges the tree against.
type Baseline struct {
	// Since is when the run's own changes began: after the base tree was
	// checked out and the setup ran, before the worker's first call. An
	// entry whose change time is after it was made or changed by the run.
	Since time.Time
	// Tracked are the base tree's paths (slash-separated, relative to the
	// root) with their git modes: git never calls a tracked path ignored,
	// and a change of its executable bit is a mode change.
	Tracked map[string]uint32
	// Exclude is the repository's own info/exclude text (the operator's),
	// read as the root's rules before the tree's .gitignore files.
	Exclude []byte
	// KeepRootGit leaves the root's own .git alone (host mode: the lane's
	// link to its repository, not the worker's); any other .git entry is
	// a repository.
	KeepRootGit bool
	// Untimed says the entries' change times tell nothing of who made
	// them (a tree rewritten by an export after the run died): every
	// git-ignored, untracked entry counts as the run's and is taken out,
	// reported as made by "run", and nothing else is judged by time (the
	// export decided the rest already). Since is then ignored.
	Untimed bool
	// DropLongPaths takes out entries whose path is longer than
	// LongPath bytes: a docker daemon, which reads the tree by full path
	// under a prefix of its own, cannot export them.
	DropLongPaths bool
	// Known are digests taken ahead (Prehash against Since): a file
	// they vouch for is not read again.
	Known *Digests
}

// LongPath is the root-relative path length past which DropLongPaths
// takes an entry out: PATH_MAX less room for a daemon's own prefix.
const LongPath = 3800

// Report is what a seal found and did. Lists are sorted by path.
type Report struct {
	// Repositories are the directories git would take for a repository,
	// and the .git entries, that the run made or changed, and the files
	// elsewhere that are hard links to a file in one of them. A seal that
	// finds any and was not told to drop them changes nothing: the caller
	// quarantines them and seals again with drop.
	Repositories []string `json:"repositories"`
	// Special are the FIFOs, sockets and devices taken out: no export
	// brings them, and a FIFO would only hang whatever reads it.
	Special []string `json:"special"`
	// Links are the links the run made whose target is absolute or leads
	// out of the tree: taken out, since no lane may hold them live.
	Links []Link `json:"links"`
	// KeptLinks are such links the base tree or the setup made: they
	// stay in the sandbox's tree, and a lane never holds them live.
	KeptLinks []Link `json:"kept_links"`
	// Ignored are the git-ignored entries the run made or changed (taken
	// out) and those the setup made (kept), a directory as one entry.
	Ignored []transcript.IgnoredChange `json:"ignored"`
	// Modes are the mode changes a reviewer should see: setuid and setgid
	// bits (stripped), world-writable entries, executable bits.
	Modes []transcript.ModeChange `json:"modes"`
	// Long are the entries taken out for DropLongPaths.
	Long []string `json:"long"`
	// Omitted counts the entries left out of the lists above, each of
	// which holds at most 1000.
	Omitted int `json:"omitted"`
}

// Link is a link and its target.
type Link struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// Pending reports whether the seal stopped for repositories the caller
// must quarantine first.
func (r *Report) Pending(drop bool) bool { return !drop && len(r.Repositories) > 0 }

// Merge adds what a later seal of the same run found to r: a run is
// sealed before every verify and once more before its export, and its
// evidence is all of them.
func (r *Report) Merge(o Report) {
	r.Repositories = mergeSorted(r.Repositories, o.Repositories)
	r.Special = mergeSorted(r.Special, o.Special)
	r.Long = mergeSorted(r.Long, o.Long)
	r.Links = mergeBy(r.Links, o.Links, func(l Link) string { return l.Path })
	r.KeptLinks = mergeBy(r.KeptLinks, o.KeptLinks, func(l Link) string { return l.Path })
	r.Ignored = mergeBy(r.Ignored, o.Ignored, func(i transcript.IgnoredChange) string { return i.Path })
	r.Modes = mergeBy(r.Modes, o.Modes, func(m transcript.ModeChange) string { return m.Path + "\x00" + m.Change })
	r.Omitted += o.Omitted
}

func mergeSorted(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// mergeBy merges two lists sorted by key; for a key in both, b's entry
// (the later seal's) wins.
func mergeBy[T any](a, b []T, key func(T) string) []T {
	seen := make(map[string]int, len(a)+len(b))
	var out []T
	for _, list := range [][]T{a, b} {
		for _, x := range list {
			if i, ok := seen[key(x)]; ok {
				out[i] = x
				continue
			}
			seen[key(x)] = len(out)
			out = append(out, x)
		}
	}
	slices.SortStableFunc(out, func(x, y T) int {
		switch kx, ky := key(x), key(y); {
		case kx < ky:
			return -1
		case kx > ky:
			return 1
		}
		return 0
	})
	return out
}

// ErrNotDir is a seal asked of something that is not a directory.
var ErrNotDir = errors.New("not a directory")

// Seal settles the tree rooted at dir (see the package doc). With drop
// false and repositories found, it only reports them (the manifest is
// nil) and changes nothing; otherwise it takes out what it must, strips
// setuid and setgid bits, and returns the manifest of what is left. No
// process may change the tree meanwhile.
func Seal(ctx context.Context, dir string, b Baseline, drop bool) (Report, *Manifest, error) {
	w, err := newWalker(ctx, dir, b)
	if err != nil {
		return Report{}, nil, err
	}
	defer w.close()
	if err := w.scan(); err != nil {
		return Report{}, nil, err
	}
	if err := w.linksIntoRepositories(); err != nil {
		return Report{}, nil, err
	}
	w.sortReport()
	if w.report.Pending(drop) {
		return w.report, nil, nil
	}
	if err := w.apply(); err != nil {
		return w.report, nil, err
	}
	return w.report, w.manifest, nil
}

// Snapshot records the tree rooted at dir as it is, taking nothing out:
// the manifest of a tree that was sealed before (keepRootGit as the seal
// had it).
func Snapshot(ctx context.Context, dir string, keepRootGit bool) (*Manifest, error) {
	w, err := newWalker(ctx, dir, Baseline{KeepRootGit: keepRootGit})
	if err != nil {
		return nil, err
	}
	defer w.close()
	w.recordOnly = true
	if err := w.scan(); err != nil {
		return nil, err
	}
	return w.manifest, nil
}

// openRoot opens dir, which must be a directory (not a link to one).
func openRoot(dir string) (*os.File, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("seal %s: %w", dir, ErrNotDir)
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", dir, err)
	}
	return f, nil
}

type (
	ignoredChange = transcript.IgnoredChange
	modeChange    = transcript.ModeChange
)
