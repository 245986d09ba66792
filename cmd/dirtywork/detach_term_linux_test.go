package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDetachedStderrLogIsNeutralised: a detached run's stderr.log (read
// with cat, less -R, tail -f on a terminal) shows worker and repository
// text as the terminal's stderr does — visibly, never as escapes that act
// — both the lines written before the run moved its stderr into the log
// and those after.
func TestDetachedStderrLogIsNeutralised(t *testing.T) {
	write, err := json.Marshal(map[string]any{"path": "note" + trick + ".txt", "content": "one\r\n" + trick + "\r\n"})
	if err != nil {
		t.Fatal(err)
	}
	script, err := json.Marshal(map[string]any{"model": "scripted/" + trick, "turns": []any{
		map[string]any{"text": trick, "hold": true, "tool_calls": []any{map[string]any{"name": "write_file", "arguments": json.RawMessage(write)}}},
		map[string]any{"text": trick, "tool_calls": []any{map[string]any{"name": "read_file", "arguments": map[string]any{"path": "missing" + trick}}}},
		map[string]any{"text": trick, "finish": trick},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e := newE2E(t, string(script))
	hostileRepo := filepath.Join(filepath.Dir(e.repo), "repo"+trick)
	if err := os.Rename(e.repo, hostileRepo); err != nil {
		t.Fatal(err)
	}
	e.repo = hostileRepo
	ann, stderr, code := e.detach("--model", "scripted/"+trick, "fix "+trick)
	if code != 0 || ann == nil {
		t.Fatalf("run --detach: exit %d, %v\n%q", code, ann, stderr)
	}
	assertInert(t, "the parent's stderr", []byte(stderr))
	e.srv.Release()
	slug := ann["slug"].(string)
	if out, werr, code := e.wait(slug); code != 0 {
		t.Fatalf("runs wait: exit %d\n%s\n%s", code, out, werr)
	}
	log, err := os.ReadFile(filepath.Join(ann["run_dir"].(string), stderrLogName))
	if err != nil {
		t.Fatal(err)
	}
	assertInert(t, "stderr.log", log)
	// The hostile text reached the log (the repository's path is in its
	// first lines), shown visibly.
	if !strings.Contains(string(log), "repo") || !strings.Contains(string(log), "␛") {
		t.Fatalf("stderr.log does not show the hostile text visibly:\n%q", log)
	}
}
