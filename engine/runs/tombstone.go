package runs

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/transcript"
)

// cleanedDir is the directory under the runs root that remembers the runs
// `runs clean` removed, one small file per slug, so a second clean can tell
// a run that is already gone from a slug that never was. Its name is no
// valid slug, so nothing takes it for a run.
const cleanedDir = ".cleaned"

// tombstone is what is kept of a run clean removed.
type tombstone struct {
	Slug      string `json:"slug"`
	RunDir    string `json:"run_dir"`
	CleanedAt string `json:"cleaned_at"`
	// ParkedRef is where its work was parked, "" when nothing was.
	ParkedRef string `json:"parked_ref,omitempty"`
}

// markCleaned records that the run in dir is being removed. It is written
// before the run dir goes: a crash in between leaves both, and the run dir
// wins.
func (s *Store) markCleaned(slug, dir, parked string) error {
	stones := filepath.Join(s.root, cleanedDir)
	if err := os.Mkdir(stones, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	data, err := json.Marshal(tombstone{Slug: slug, RunDir: dir, CleanedAt: s.now().UTC().Format("2006-01-02T15:04:05Z"), ParkedRef: parked})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(stones, slug), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(append(data, '\n'))
	return errors.Join(werr, f.Close())
}

// cleaned returns what is kept of slug's run when clean removed it; false
// when it did not (or slug is no valid slug).
func (s *Store) cleaned(slug string) (tombstone, bool) {
	var ts tombstone
	if transcript.ValidSlug(slug) != nil {
		return ts, false
	}
	f, err := os.OpenFile(filepath.Join(s.root, cleanedDir, slug), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return ts, false
	}
	defer func() { _ = f.Close() }() // read only
	data, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil || json.Unmarshal(data, &ts) != nil || ts.Slug != slug {
		return ts, false
	}
	return ts, true
}
