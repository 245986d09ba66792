package gitops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Manifest file layout.
const (
	manifestName    = "lanes.json"
	manifestVersion = 1
	// maxRemembered bounds how many removed lanes the manifest remembers
	// so that closing one again reports "removed" instead of "no lane".
	maxRemembered = 1000
	// maxManifestBytes refuses absurd manifests before decoding them.
	maxManifestBytes = 64 << 20
)

// LaneStatus is the recorded state of a lane.
type LaneStatus string

// Lane states. Open and RetainedDirty are recorded in the manifest; Removed
// is only ever reported (a removed lane has no entry).
const (
	// StatusOpen: the lane was opened and not closed yet.
	StatusOpen LaneStatus = "open"
	// StatusRetainedDirty: a close found uncommitted changes or commits
	// beyond the base, so worktree and branch were kept.
	StatusRetainedDirty LaneStatus = "retained-dirty"
	// StatusRemoved: the lane's worktree and branch are gone.
	StatusRemoved LaneStatus = "removed"
)

// Lane is a lane's record in the manifest: the binding between an owner id
// and a worktree plus branch, which is what survives a crash of the owner.
type Lane struct {
	// ID is the owner id the lane is bound to, e.g. "RUN/TASK".
	ID string `json:"id"`
	// Worktree is the absolute, resolved worktree path.
	Worktree string `json:"worktree"`
	// Branch is the short branch name, dirtywork/<enc>.
	Branch string `json:"branch"`
	// BaseCommit is HEAD of the new worktree when it was created.
	BaseCommit string `json:"base_commit"`
	// GitDir is the worktree's own git dir (<common>/worktrees/<name>),
	// used to pin commands that read the worktree's content.
	GitDir string `json:"git_dir"`
	// OwnerPID is the pid of the process that asked for the lane.
	OwnerPID int `json:"owner_pid"`
	// OwnerSession is an opaque session label given by the owner.
	OwnerSession string `json:"owner_session"`
	// Created is when the lane was opened, UTC RFC 3339.
	Created string `json:"created"`
	// Status is StatusOpen or StatusRetainedDirty.
	Status LaneStatus `json:"status"`
	// NoCheckout records a lane opened without a checkout (a container
	// brings its own tree), which Close may remove while it is still empty.
	NoCheckout bool `json:"no_checkout,omitempty"`
}

// removedLane remembers a lane that was closed and removed.
type removedLane struct {
	ID       string `json:"id"`
	Worktree string `json:"worktree"`
	Branch   string `json:"branch"`
	Removed  string `json:"removed"`
}

// manifest is the content of <common>/dirtywork/lanes.json.
type manifest struct {
	Version int           `json:"version"`
	Lanes   []Lane        `json:"lanes"`
	Removed []removedLane `json:"removed"`
}

// find returns the index of the lane with id, or -1.
func (m *manifest) find(id string) int {
	return slices.IndexFunc(m.Lanes, func(l Lane) bool { return l.ID == id })
}

// findRemoved returns the index of the remembered removal of id, or -1.
func (m *manifest) findRemoved(id string) int {
	return slices.IndexFunc(m.Removed, func(r removedLane) bool { return r.ID == id })
}

// put inserts or replaces a lane and forgets any earlier removal of its id.
func (m *manifest) put(l Lane) {
	if i := m.findRemoved(l.ID); i >= 0 {
		m.Removed = slices.Delete(m.Removed, i, i+1)
	}
	if i := m.find(l.ID); i >= 0 {
		m.Lanes[i] = l
	} else {
		m.Lanes = append(m.Lanes, l)
	}
	slices.SortFunc(m.Lanes, func(a, b Lane) int { return strings.Compare(a.ID, b.ID) })
}

// drop removes the lane with id; when removed is non-empty (a time) it is
// remembered as removed, the oldest memories making room.
func (m *manifest) drop(l Lane, removed string) {
	if i := m.find(l.ID); i >= 0 {
		m.Lanes = slices.Delete(m.Lanes, i, i+1)
	}
	if removed == "" {
		return
	}
	if i := m.findRemoved(l.ID); i >= 0 {
		m.Removed = slices.Delete(m.Removed, i, i+1)
	}
	m.Removed = append(m.Removed, removedLane{ID: l.ID, Worktree: l.Worktree, Branch: l.Branch, Removed: removed})
	if over := len(m.Removed) - maxRemembered; over > 0 {
		m.Removed = slices.Delete(m.Removed, 0, over)
	}
}

// manifestPath is the manifest's location for repo.
func manifestPath(repo Repo) string { return filepath.Join(repo.StateDir(), manifestName) }

// readManifest loads the manifest at path; a missing file is an empty
// manifest. Anything unparsable or inconsistent is ErrCorruptManifest:
// the file is evidence of lanes that may hold work, so it is never
// replaced behind the operator's back.
func readManifest(path string) (*manifest, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return &manifest{Version: manifestVersion}, nil
	}
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("lane manifest %s %w: it is a symlink", path, ErrUnsafeFile)
		}
		return nil, fmt.Errorf("open lane manifest %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read-only: closing cannot lose data
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read lane manifest %s: %w", path, err)
	}
	if len(data) > maxManifestBytes {
		return nil, corrupt(path, fmt.Sprintf("larger than %d bytes", maxManifestBytes))
	}
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return nil, corrupt(path, err.Error())
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, corrupt(path, "trailing data after the JSON object")
	}
	if err := m.validate(); err != nil {
		return nil, corrupt(path, err.Error())
	}
	return &m, nil
}

// corrupt builds the ErrCorruptManifest error for path.
func corrupt(path, detail string) error {
	return fmt.Errorf("%w: %s: %s (move it aside to start over; lanes it recorded keep their worktrees and branches)", ErrCorruptManifest, path, detail)
}

// validate checks what the lane operations rely on.
func (m *manifest) validate() error {
	switch {
	case m.Version == 0:
		return errors.New("no version")
	case m.Version > manifestVersion:
		return fmt.Errorf("version %d was written by a newer dirtywork", m.Version)
	}
	seen := map[string]bool{}
	for i, l := range m.Lanes {
		// Names must be the ones the id encodes to, so a damaged entry can
		// never steer a close at some other worktree or branch.
		enc, err := EncodeLaneID(l.ID)
		switch {
		case err != nil:
			return fmt.Errorf("lanes[%d]: invalid id %q", i, l.ID)
		case seen[l.ID]:
			return fmt.Errorf("lanes[%d]: duplicate id %q", i, l.ID)
		case !filepath.IsAbs(l.Worktree) || filepath.Base(l.Worktree) != LaneWorktreeName(enc) || filepath.Base(filepath.Dir(l.Worktree)) != lanesDirName:
			return fmt.Errorf("lanes[%d] (%s): worktree %q is not .../%s/%s", i, l.ID, l.Worktree, lanesDirName, LaneWorktreeName(enc))
		case l.Branch != LaneBranch(enc):
			return fmt.Errorf("lanes[%d] (%s): branch %q is not %s", i, l.ID, l.Branch, LaneBranch(enc))
		case !isHex(l.BaseCommit):
			return fmt.Errorf("lanes[%d] (%s): base_commit %q is not a commit id", i, l.ID, l.BaseCommit)
		case l.Status != StatusOpen && l.Status != StatusRetainedDirty:
			return fmt.Errorf("lanes[%d] (%s): unknown status %q", i, l.ID, l.Status)
		}
		seen[l.ID] = true
	}
	return nil
}

// writeManifest replaces the manifest atomically: a private temp file in
// the same directory, synced, then renamed over the old one. Callers hold
// the repo lock.
func writeManifest(path string, m *manifest) error {
	m.Version = manifestVersion
	if m.Lanes == nil {
		m.Lanes = []Lane{}
	}
	if m.Removed == nil {
		m.Removed = []removedLane{}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode lane manifest: %w", err)
	}
	data = append(data, '\n')
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+manifestName+".tmp-*") // 0600, O_EXCL
	if err != nil {
		return fmt.Errorf("create temp file for lane manifest in %s: %w", dir, err)
	}
	committed := false
	defer func() {
		if !committed {
			// The temp file is being abandoned; the error that got us
			// here is the one to report.
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write lane manifest %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync lane manifest %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close lane manifest %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace lane manifest %s: %w", path, err)
	}
	committed = true
	// The rename is durable once the directory is synced; failing to sync
	// it loses nothing that is not already on disk in the file itself.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// isHex reports whether s is a non-empty lowercase hex string (a full
// SHA-1 or SHA-256 object id).
func isHex(s string) bool {
	if len(s) < 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLowerHex(s[i]) {
			return false
		}
	}
	return true
}
