package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ScratchPrefix begins the name of the directory a sweep stages its
// cases in; only such a directory is ever removed by a reap.
const ScratchPrefix = "dwbench-sweep-"

// ErrSweepRunning is a reap refused because the sweep that writes the
// results file is still running.
var ErrSweepRunning = errors.New("a sweep is still writing this results file")

// Reaper clears what a killed sweep left: the runs of its cases in
// flight (their containers and volumes, on the engine each ran on), its
// acceptance checks, and its scratch directory of staged repositories.
type Reaper struct {
	// CleanRun cleans one run of the store on the docker engine it ran on
	// (a crashed run's clean: its record and transcript kept).
	CleanRun func(ctx context.Context, dockerHost, slug string) error
	// RemoveAcceptance removes, on one docker engine, the acceptance
	// checks of the results file, returning what it removed.
	RemoveAcceptance func(ctx context.Context, dockerHost string) ([]string, error)
}

// Reap clears what the killed sweep of the results file left, on the
// engines it recorded and on hosts, and says what it did, one line per
// thing. A results file without a state file (never run by this version,
// or a sweep that ended) has only acceptance checks to look for.
func (r Reaper) Reap(ctx context.Context, results string, hosts []string) ([]string, error) {
	st, running, err := ReadState(results)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st = SweepState{}
	case err != nil:
		return nil, err
	case running:
		return nil, fmt.Errorf("%w: %s", ErrSweepRunning, results)
	}
	var done []string
	var errs []error
	engines := slices.Clone(hosts)
	for _, f := range st.InFlight {
		if !slices.Contains(engines, f.DockerHost) {
			engines = append(engines, f.DockerHost)
		}
		if f.Slug == "" || r.CleanRun == nil {
			continue
		}
		if err := r.CleanRun(ctx, f.DockerHost, f.Slug); err != nil {
			errs = append(errs, fmt.Errorf("clean run %s: %w", f.Slug, err))
			continue
		}
		done = append(done, "cleaned run "+f.Slug+" ("+f.Model+", "+f.Task+", repeat "+fmt.Sprint(f.Repeat)+")")
	}
	if r.RemoveAcceptance != nil {
		for _, h := range engines {
			removed, err := r.RemoveAcceptance(ctx, h)
			if err != nil {
				errs = append(errs, fmt.Errorf("acceptance checks on %s: %w", engineName(h), err))
			}
			for _, name := range removed {
				done = append(done, "removed acceptance object "+name)
			}
		}
	}
	if dir := st.Scratch; dir != "" {
		if !filepath.IsAbs(dir) || !strings.HasPrefix(filepath.Base(dir), ScratchPrefix) {
			errs = append(errs, fmt.Errorf("the state names %q as its scratch directory: not one a sweep makes, left alone", dir))
		} else if _, err := os.Lstat(dir); err == nil {
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, err)
			} else {
				done = append(done, "removed "+dir)
			}
		}
	}
	return done, errors.Join(errs...)
}

// engineName is how a docker host is named in messages.
func engineName(host string) string {
	if host == "" {
		return "the default docker engine"
	}
	return host
}
