package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
)

// Labels every object of a run carries (the contract's S-3), so that
// leftovers are found, and verified before removal, by label.
const (
	// LabelRun is the run's slug.
	LabelRun = "dirtywork.run"
	// LabelRepo is the hash of the run's repository's resolved path
	// (RepoLabel).
	LabelRepo = "dirtywork.repo"
	// LabelReap marks a reap marker: a container standing for the removal
	// of the volumes its value names (comma-separated), which a run whose
	// export succeeded handed off. Once the marker has exited 0, the
	// marker and each named volume carrying the marker's dirtywork.run
	// label may be removed.
	LabelReap = "dirtywork.reap"
)

// slugPattern is what a slug may look like: it is part of container and
// volume names, which docker restricts to [a-zA-Z0-9][a-zA-Z0-9_.-]*.
var slugPattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,120}$`)

// CheckSlug refuses a slug that cannot name a container.
func CheckSlug(slug string) error {
	if !slugPattern.MatchString(slug) {
		return fmt.Errorf("slug %q cannot name a container (want [a-zA-Z0-9][a-zA-Z0-9_.-]*)", slug)
	}
	return nil
}

// Names are the names of what a run with one slug makes.
type Names struct {
	Container   string // dw-<slug>: the worker container
	WorkVolume  string // dw-<slug>-work: the tree
	ToolsVolume string // dw-<slug>-tools: the base objects
	Setup       string // dw-<slug>-setup: the --setup container
	Measurer    string // dw-<slug>-measure: measures the tree from outside
	Egress      string // dw-<slug>-egress: the egress proxy (runs with network)
}

// NamesFor returns the names of slug's objects.
func NamesFor(slug string) (Names, error) {
	if err := CheckSlug(slug); err != nil {
		return Names{}, err
	}
	base := "dw-" + slug
	return Names{
		Container:   base,
		WorkVolume:  base + "-work",
		ToolsVolume: base + "-tools",
		Setup:       base + "-setup",
		Measurer:    base + "-measure",
		Egress:      base + "-egress",
	}, nil
}

// RepoLabel is the dirtywork.repo label of a repository: the hex SHA-256 of
// its resolved path, so a path with any characters makes a valid label and
// runs of one repository are found together.
func RepoLabel(repoRoot string) string {
	resolved, err := filepath.EvalSymlinks(repoRoot)
	if err != nil {
		resolved = filepath.Clean(repoRoot)
	}
	sum := sha256.Sum256([]byte(resolved))
	return hex.EncodeToString(sum[:])
}

// RunLabels are the labels of every object of slug's run on the
// repository at repoRoot.
func RunLabels(slug, repoRoot string) map[string]string {
	return map[string]string{LabelRun: slug, LabelRepo: RepoLabel(repoRoot)}
}
