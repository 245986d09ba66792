package transcript

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func readRaw(t *testing.T, dir string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, RecordName))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A typed write sets exactly its keys, explicit nulls included, and keeps
// every other key, unknown ones too.
func TestPatchWritesItsKeysAndKeepsTheRest(t *testing.T) {
	dir := t.TempDir()
	if err := CreateRun(dir, RunStartFields{SchemaVersion: 2, Status: StatusRunning, Slug: "s", Task: "t", HostPID: 7}); err != nil {
		t.Fatal(err)
	}
	start := readRaw(t, dir)
	if start["container"] != nil || !slices.Contains(keys(start), "container") || start["host_pid"] != float64(7) {
		t.Fatalf("start record %v", start)
	}
	if _, err := MergeRecord(dir, Record{"from_a_newer_version": "kept"}); err != nil {
		t.Fatal(err)
	}
	rec, err := Patch(dir, FailureFields{Status: StatusSandboxError, Error: "no room", Ended: "e"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != StatusSandboxError || rec.Task != "t" {
		t.Fatalf("Patch returned %+v", rec)
	}
	after := readRaw(t, dir)
	if after["from_a_newer_version"] != "kept" || after["error"] != "no room" || after["slug"] != "s" {
		t.Fatalf("after the patch %v", after)
	}
	if slices.Contains(keys(after), "export_status") || slices.Contains(keys(after), "finalize_error") {
		t.Fatalf("an omitted field was written: %v", keys(after))
	}
	// A later patch's key wins over an earlier one's.
	if _, err := Patch(dir, StatusFields{Status: StatusMaxTurns}, StatusFields{Status: StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	if got := readRaw(t, dir)["status"]; got != "completed" {
		t.Fatalf("status %v", got)
	}
}

// UpdateRun hands over the typed record under the lock; no patches, no
// write; an error, no write.
func TestUpdateRunReadsTypedAndWritesOnlyWhatItReturns(t *testing.T) {
	dir := t.TempDir()
	if err := WriteRecord(dir, Record{"status": "running", "ended": "x", "unknown": 1}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, RecordName))
	if _, err := UpdateRun(dir, func(r RunRecord) ([]any, error) {
		if r.Status != StatusRunning || r.Ended != "x" {
			t.Errorf("typed record %+v", r)
		}
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := UpdateRun(dir, func(RunRecord) ([]any, error) {
		return []any{StatusFields{Status: StatusCompleted}}, errors.New("changed my mind")
	}); err == nil {
		t.Fatal("fn's error was not returned")
	}
	if after, _ := os.ReadFile(filepath.Join(dir, RecordName)); string(after) != string(before) {
		t.Fatalf("run.json changed:\n%s\n%s", before, after)
	}
	got, err := UpdateRun(dir, func(RunRecord) ([]any, error) {
		return []any{StatusFields{Status: StatusCompleted}}, nil
	})
	if err != nil || got.Status != StatusCompleted || readRaw(t, dir)["unknown"] != float64(1) {
		t.Fatalf("UpdateRun: %+v %v %v", got, err, readRaw(t, dir))
	}
}

// One reader: a key of the wrong type is a warning and reads as absent;
// a file that is not one JSON object is corrupt, a missing one is not.
func TestReadRunWarnsOfAWrongTypedKey(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, RecordName), []byte(`{"status":"completed","turns":"many","host_pid":true,"task":"t"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rf, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rf.Record.Status != StatusCompleted || rf.Record.Task != "t" || rf.Record.Turns != nil || rf.Record.HostPID != nil {
		t.Fatalf("record %+v", rf.Record)
	}
	if !strings.Contains(rf.Warning, `"turns"`) || !strings.Contains(rf.Warning, `"host_pid"`) || rf.Size == 0 || rf.Ino == 0 {
		t.Fatalf("warning %q, stamp %d %d", rf.Warning, rf.Size, rf.Ino)
	}
	// A repeated key reads as its last copy, with no warning when that is
	// good; a bad last copy is named.
	for doc, want := range map[string]string{`{"turns":"x","turns":1}`: "", `{"turns":1,"turns":"x"}`: `"turns"`} {
		if err := os.WriteFile(filepath.Join(dir, RecordName), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		rf, err := ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		if (want == "") != (rf.Warning == "") || !strings.Contains(rf.Warning, want) || (want == "") != (rf.Record.Turns != nil && *rf.Record.Turns == 1) {
			t.Errorf("%s: warning %q, turns %v", doc, rf.Warning, rf.Record.Turns)
		}
	}
	for _, bad := range []string{`[1]`, `{"a":1} {}`, `{`, ``} {
		if err := os.WriteFile(filepath.Join(dir, RecordName), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadRun(dir); !errors.Is(err, ErrCorruptRecord) || !strings.Contains(err.Error(), dir) {
			t.Errorf("ReadRun of %q: %v", bad, err)
		}
	}
	if _, err := ReadRun(t.TempDir()); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrCorruptRecord) {
		t.Errorf("missing run.json: %v", err)
	}
}
