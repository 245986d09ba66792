package gitops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func sampleLane(id string) Lane {
	return Lane{
		ID:           id,
		Worktree:     "/repo/.worktrees/dw-" + id,
		Branch:       "dirtywork/" + id,
		BaseCommit:   strings.Repeat("ab", 20),
		GitDir:       "/repo/.git/worktrees/dw-" + id,
		OwnerPID:     42,
		OwnerSession: "s1",
		Created:      "2026-03-04T05:06:07Z",
		Status:       StatusOpen,
	}
}

func TestManifestRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), manifestName)
	mf, err := readManifest(path)
	if err != nil || len(mf.Lanes) != 0 {
		t.Fatalf("missing manifest: %+v, %v", mf, err)
	}
	mf.put(sampleLane("b"))
	mf.put(sampleLane("a"))
	mf.drop(sampleLane("gone"), "2026-03-04T05:06:07Z")
	if err := writeManifest(path, mf); err != nil {
		t.Fatal(err)
	}
	got, err := readManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, mf) {
		t.Errorf("read back %+v, want %+v", got, mf)
	}
	if got.Lanes[0].ID != "a" {
		t.Errorf("lanes not sorted by id: %+v", got.Lanes)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("manifest mode = %v, %v; want 0600", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temp files left behind: %v", entries)
	}
}

func TestManifestRemembersBoundedRemovals(t *testing.T) {
	t.Parallel()
	mf := &manifest{Version: manifestVersion}
	for i := range maxRemembered + 5 {
		mf.drop(sampleLane(fmt.Sprint("l", i)), "t")
	}
	if len(mf.Removed) != maxRemembered || mf.Removed[0].ID != "l5" {
		t.Errorf("remembered %d, oldest %q; want %d, l5", len(mf.Removed), mf.Removed[0].ID, maxRemembered)
	}
	mf.put(sampleLane("l7")) // reopened: no longer removed
	if mf.findRemoved("l7") >= 0 {
		t.Error("a reopened lane is still remembered as removed")
	}
}

func TestManifestCorruptionIsAnErrorAndKeepsTheFile(t *testing.T) {
	t.Parallel()
	good := `{"version":1,"lanes":[%s],"removed":[]}`
	lane := `{"id":"a","worktree":"/r/.worktrees/dw-a","branch":"dirtywork/a","base_commit":"` + strings.Repeat("ab", 20) + `","status":"open"}`
	tests := []struct{ name, content string }{
		{"not json", "{nope"},
		{"empty file", ""},
		{"trailing data", fmt.Sprintf(good, lane) + "{}"},
		{"no version", `{"lanes":[]}`},
		{"newer version", `{"version":2,"lanes":[]}`},
		{"duplicate id", fmt.Sprintf(good, lane+","+lane)},
		{"relative worktree", fmt.Sprintf(good, strings.Replace(lane, "/r/.worktrees", "r/.worktrees", 1))},
		{"foreign branch", fmt.Sprintf(good, strings.Replace(lane, "dirtywork/a", "main", 1))},
		{"branch of another id", fmt.Sprintf(good, strings.Replace(lane, "dirtywork/a", "dirtywork/b", 1))},
		{"worktree of another id", fmt.Sprintf(good, strings.Replace(lane, "dw-a", "dw-b", 1))},
		{"worktree outside .worktrees", fmt.Sprintf(good, strings.Replace(lane, "/r/.worktrees/dw-a", "/r/dw-a", 1))},
		{"bad base", fmt.Sprintf(good, strings.Replace(lane, strings.Repeat("ab", 20), "HEAD", 1))},
		{"bad status", fmt.Sprintf(good, strings.Replace(lane, `"open"`, `"weird"`, 1))},
		{"bad id", fmt.Sprintf(good, strings.Replace(lane, `"id":"a"`, `"id":""`, 1))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), manifestName)
			writeFile(t, path, tt.content)
			_, err := readManifest(path)
			if !errors.Is(err, ErrCorruptManifest) || !strings.Contains(err.Error(), path) {
				t.Fatalf("err = %v, want ErrCorruptManifest naming the file", err)
			}
			after, _ := os.ReadFile(path)
			if string(after) != tt.content {
				t.Error("the corrupt manifest was changed")
			}
		})
	}
	t.Run("valid sample parses", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), manifestName)
		writeFile(t, path, fmt.Sprintf(good, lane))
		if _, err := readManifest(path); err != nil {
			t.Fatal(err)
		}
	})
}

func TestManifestRefusesSymlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere.json")
	writeFile(t, target, `{"version":1,"lanes":[]}`)
	path := filepath.Join(dir, manifestName)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if _, err := readManifest(path); !errors.Is(err, ErrUnsafeFile) {
		t.Fatalf("err = %v, want ErrUnsafeFile", err)
	}
}
