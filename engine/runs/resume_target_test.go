package runs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/transcript"
)

// readPriorDir finds the run in dir by its path, as `resume DIR` does, and
// reads it as a resume would.
func readPriorDir(t *testing.T, dir string) (*Prior, error) {
	t.Helper()
	run, err := Open(t.TempDir()).Find(dir)
	if err != nil {
		t.Fatalf("find %s: %v", dir, err)
	}
	return ReadPrior(run)
}

func TestReadPriorNeedsEveryKey(t *testing.T) {
	t.Parallel()
	full := transcript.Record{
		"slug": "s", "repo": "/r", "worktree": "/r/.worktrees/dw-s", "branch": "dirtywork/s",
		"base_commit": strings.Repeat("a", 40), "sandbox": "none", "status": "max_turns", "task": "t", "model": "m",
	}
	for _, key := range []string{"slug", "repo", "worktree", "branch", "base_commit", "sandbox", "status"} {
		for _, bad := range []any{nil, 7, true} {
			dir := filepath.Join(t.TempDir(), "run-"+key)
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			rec := transcript.Record{}
			for k, v := range full {
				rec[k] = v
			}
			if bad == nil {
				delete(rec, key)
			} else {
				rec[key] = bad
			}
			if err := transcript.WriteRecord(dir, rec); err != nil {
				t.Fatal(err)
			}
			_, err := readPriorDir(t, dir)
			var pe *Refusal
			if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "is missing '"+key+"'") {
				t.Errorf("%s = %v: %v", key, bad, err)
			}
		}
	}
	// task and model come from run_start, turns from the last run_end.
	dir := filepath.Join(t.TempDir(), "run-start")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	rec := transcript.Record{}
	for k, v := range full {
		rec[k] = v
	}
	delete(rec, "task")
	delete(rec, "model")
	if err := transcript.WriteRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	tw, err := transcript.Create(filepath.Join(dir, transcript.TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	_ = tw.Write(transcript.RunStart{Task: "from run_start", Model: "model/x"})
	_ = tw.Write(transcript.RunEnd{Status: "max_turns", Turns: 7})
	_ = tw.Close()
	pr, err := readPriorDir(t, dir)
	if err != nil || pr.Task != "from run_start" || pr.Model != "model/x" || pr.Turns == nil || *pr.Turns != 7 {
		t.Fatalf("%+v %v", pr, err)
	}
}

func TestFindTakesASlugOrARunDirectory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "fix-bug-1")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := transcript.WriteRecord(dir, transcript.Record{"slug": "fix-bug-1", "status": "completed"}); err != nil {
		t.Fatal(err)
	}
	s := Open(root)
	bySlug, err := s.Find("fix-bug-1")
	if err != nil || bySlug.Dir != dir || bySlug.Record.Status != transcript.StatusCompleted {
		t.Fatalf("by slug: %+v %v", bySlug, err)
	}
	// A run directory is taken wherever it lies, through a symlink too.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	byPath, err := Open(t.TempDir()).Find(link)
	if err != nil || byPath.Dir != dir || byPath.Slug != "fix-bug-1" {
		t.Fatalf("by path: %+v %v", byPath, err)
	}
	// A directory without run.json is found; reading it as a prior run is
	// what refuses.
	empty := filepath.Join(root, "no-record")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	run, err := s.Find("no-record")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPrior(run); err == nil || !strings.Contains(err.Error(), "has no run.json in "+empty) {
		t.Fatalf("prior without run.json: %v", err)
	}

	file := filepath.Join(root, "plain-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for target, want := range map[string]string{
		"../escape":              "",
		"no-such-run":            "no such run",
		file:                     "is not a run directory",
		filepath.Join(root, "x"): "no run directory at",
	} {
		_, err := s.Find(target)
		var r *Refusal
		if !errors.As(err, &r) || !strings.Contains(r.Msg, want) {
			t.Errorf("Find(%q) = %v, want a refusal containing %q", target, err, want)
		}
	}
}
