package launch

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Remembered is what the form keeps of a repository's last launch.
type Remembered struct {
	Model   string    `json:"model"`
	Sandbox string    `json:"sandbox"`
	Verify  string    `json:"verify"`
	At      time.Time `json:"at"`
}

// maxRemembered bounds the file: the repositories launched in last.
const maxRemembered = 200

// Memory is the launch form's memory of each repository's last model,
// sandbox and verify command, kept in one small JSON file so the form
// fills them in again in the next session. A nil Memory remembers
// nothing. Safe for concurrent use.
type Memory struct {
	mu     sync.Mutex
	path   string
	byRepo map[string]Remembered
}

// LoadMemory reads the memory file at path; a missing or unreadable file
// is an empty memory (it is rewritten at the next launch).
func LoadMemory(path string) *Memory {
	m := &Memory{path: path, byRepo: map[string]Remembered{}}
	data, err := os.ReadFile(path)
	if err != nil {
		return m
	}
	var byRepo map[string]Remembered
	if json.Unmarshal(data, &byRepo) == nil && byRepo != nil {
		m.byRepo = byRepo
	}
	return m
}

// Recall is what was launched last in repo.
func (m *Memory) Recall(repo string) (Remembered, bool) {
	if m == nil || repo == "" {
		return Remembered{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.byRepo[repo]
	return r, ok
}

// Remember records r as repo's last launch and writes the file (whole,
// through a temporary file, so a crash leaves the old one).
func (m *Memory) Remember(repo string, r Remembered) error {
	if m == nil || repo == "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byRepo[repo] = r
	if len(m.byRepo) > maxRemembered {
		repos := make([]string, 0, len(m.byRepo))
		for k := range m.byRepo {
			repos = append(repos, k)
		}
		slices.SortFunc(repos, func(a, b string) int { return m.byRepo[b].At.Compare(m.byRepo[a].At) })
		for _, k := range repos[maxRemembered:] {
			delete(m.byRepo, k)
		}
	}
	data, err := json.MarshalIndent(m.byRepo, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(m.path), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(m.path), ".launch-*.json")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // gone once renamed
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), m.path)
}
