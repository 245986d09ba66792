package runs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
	"github.com/dirtywork/dirtywork/transcript"
)

// Store is the runs root and everything done to the runs in it. It is
// safe for concurrent use; every write to a run.json is a locked
// read-merge-write shared with every other process.
type Store struct {
	root   string
	git    *gitops.Git
	docker Docker
	now    func() time.Time
	// identity is the author and committer of Accept's and Clean's
	// commits; see Identity.
	identity func(ctx context.Context, repo string) Identity
	// export is the validated export of a kept work volume into its
	// worktree (ExportRun).
	export func(ctx context.Context, slug string, opts ExportOptions) (*ExportResult, error)
	// salvage writes what can be written of a volume the export refuses
	// into its worktree (SalvageRun).
	salvage func(ctx context.Context, slug string, opts ExportOptions) (workspace.VolumeSalvage, error)
	// defaultImage makes the export container when run.json names none.
	defaultImage string
}

// Option configures a Store.
type Option func(*Store)

// WithDocker sets how the store reaches the Docker daemon (the default
// dials the daemon of the environment lazily, once per call that needs it).
func WithDocker(d Docker) Option { return func(s *Store) { s.docker = d } }

// WithGit sets the git the store runs (tests).
func WithGit(g *gitops.Git) Option { return func(s *Store) { s.git = g } }

// WithExporter sets how the store exports a kept volume (tests).
func WithExporter(f func(ctx context.Context, slug string, opts ExportOptions) (*ExportResult, error)) Option {
	return func(s *Store) { s.export = f }
}

// WithSalvager sets how the store salvages a volume the export refuses
// (tests).
func WithSalvager(f func(ctx context.Context, slug string, opts ExportOptions) (workspace.VolumeSalvage, error)) Option {
	return func(s *Store) { s.salvage = f }
}

// WithDefaultImage names the image a volume export uses when run.json
// names none.
func WithDefaultImage(image string) Option { return func(s *Store) { s.defaultImage = image } }

// WithClock sets the store's clock (tests).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithIdentity fixes the author and committer of the store's commits.
func WithIdentity(id Identity) Option {
	return func(s *Store) { s.identity = func(context.Context, string) Identity { return id } }
}

// Open returns the store over root, the runs root. The root need not
// exist yet (a store with no runs lists none).
func Open(root string, opts ...Option) *Store {
	s := &Store{root: root, git: gitops.New(), now: time.Now, export: ExportRun, salvage: SalvageRun}
	s.identity = s.operatorIdentity
	for _, o := range opts {
		o(s)
	}
	if s.docker == nil {
		s.docker = defaultDocker()
	}
	return s
}

// OpenDefault opens the store over the runs root of the environment
// ($DIRTYWORK_HOME/runs or ~/.dirtywork/runs).
func OpenDefault(opts ...Option) (*Store, error) {
	root, err := transcript.RunsRoot()
	if err != nil {
		return nil, err
	}
	return Open(root, opts...), nil
}

// Root is the runs root the store is over.
func (s *Store) Root() string { return s.root }

// ErrNoSuchRun and ErrInvalidSlug are transcript's: an unknown slug, and
// one that breaks the slug rule or leaves the runs root.
var (
	ErrNoSuchRun   = transcript.ErrNoSuchRun
	ErrInvalidSlug = transcript.ErrInvalidSlug
)

// Get looks a run up: slug → run dir → record → alive. A bad slug matches
// ErrInvalidSlug, an absent run ErrNoSuchRun, and an unreadable run.json is
// matches transcript.ErrCorruptRecord.
func (s *Store) Get(slug string) (*Run, error) {
	dir, err := transcript.FindRunDir(s.root, slug)
	if err != nil {
		return nil, err
	}
	run := s.load(slug, dir)
	if run.Err != nil {
		if errors.Is(run.Err, fs.ErrNotExist) {
			return nil, fmt.Errorf("run '%s' has no run.json in %s: %w", slug, dir, run.Err)
		}
		return nil, run.Err
	}
	return run, nil
}

// load reads one run; failures are kept in Run.Err.
func (s *Store) load(slug, dir string) *Run {
	run := &Run{Slug: slug, Dir: dir}
	rec, warning, stamp, err := readRecord(dir)
	run.stamp = stamp
	if err != nil {
		run.Err = err
		run.Alive = runAlive(dir, nil)
	} else {
		run.Record, run.Warning = rec, warning
		run.Alive = runAlive(dir, &run.Record)
	}
	return run
}

// runAlive reports whether the run in dir is alive: some process holds its
// liveness lock; or, for a record dirtywork 0.9.1 wrote (it has no
// liveness file), it is recorded as running and its host_pid is still the
// run's process (transcript.LegacyAlive). rec is nil when run.json could
// not be read.
func runAlive(dir string, rec *transcript.RunRecord) bool {
	alive, err := transcript.IsAlive(dir)
	if err != nil {
		return false
	}
	if alive || rec == nil || rec.Status != transcript.StatusRunning || rec.HostPID == nil || transcript.HasLivenessFile(dir) {
		return alive
	}
	return transcript.LegacyAlive(*rec.HostPID, rec.Started)
}

// ListOptions choose what List finds out besides the records.
type ListOptions struct {
	// Leftovers asks for what exists of each run outside its run dir
	// (worktree, branch, container, volume): one `git worktree list` per
	// repository, one container list and one volume list per call.
	Leftovers bool
}

// List returns every run under the root (subdirectories holding a
// run.json, in slug order). A run whose run.json cannot be read is listed
// with Err set.
func (s *Store) List(ctx context.Context, opts ListOptions) ([]*Run, error) {
	slugs, err := s.slugs()
	if err != nil {
		return nil, err
	}
	runs := make([]*Run, len(slugs))
	// Reading thousands of small files is latency-bound: a few readers at
	// once keep the disk (or its cache) busy.
	workers := min(max(runtime.GOMAXPROCS(0)*2, 4), 16)
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				runs[i] = s.load(slugs[i], s.root+string(os.PathSeparator)+slugs[i])
			}
		}()
	}
	for i := range slugs {
		next <- i
	}
	close(next)
	wg.Wait()
	kept := runs[:0]
	for _, r := range runs {
		if r.Err != nil && errors.Is(r.Err, fs.ErrNotExist) {
			continue // a directory without run.json is not a run (yet)
		}
		kept = append(kept, r)
	}
	if opts.Leftovers {
		s.fillLeftovers(ctx, kept)
	}
	return kept, nil
}

// slugs are the names of the root's subdirectories that are valid slugs,
// sorted.
func (s *Store) slugs() ([]string, error) {
	entries, err := os.ReadDir(s.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list runs in %s: %w", s.root, err)
	}
	slugs := make([]string, 0, len(entries))
	for _, e := range entries {
		// A symlink is no run dir (FindRunDir would refuse one leaving the
		// root); listing never follows one.
		if !e.IsDir() || transcript.ValidSlug(e.Name()) != nil {
			continue
		}
		slugs = append(slugs, e.Name())
	}
	sort.Strings(slugs)
	return slugs, nil
}
