package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fuzzRunRecords are run.json files as dirtywork writes them over a run's
// life: at the start, after a docker run's end and export, after a
// failure, and after a review.
func fuzzRunRecords(f *testing.F) [][]byte {
	str := func(s string) *string { return &s }
	exit := 1
	records := [][]any{
		{RunStartFields{
			SchemaVersion: 2, Status: StatusRunning, Slug: "fix-pager-0102030405-abcd1234", Repo: "/home/u/src/pager",
			Worktree: "/home/u/.dirtywork/lanes/pager/fix-pager", Branch: "dirtywork/fix-pager-0102030405-abcd1234",
			BaseCommit: "4f3c2a1b9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b", BaseRef: "HEAD", BaseBranch: str("main"),
			Task: "Fix the off-by-one in Pager.Next <&>", Model: "qwen/qwen3-coder-next", Provider: "openai",
			ContextWindow: 65536, ContextWindowSource: "provider:openai:server", VerifyCommand: str("go test ./..."),
			VerifyRounds: 2, VerifyTimeout: 600, Container: str("dw-fix-pager"), Volume: str("dw-fix-pager-work"),
			Image: str("dirtywork-worker:dev"), HostPID: 4242, Started: "2026-01-02T03:04:05.123456789Z", Sandbox: "docker",
		}},
		{
			RunStartFields{SchemaVersion: 2, Status: StatusRunning, Slug: "s", Sandbox: "host", HostPID: 1},
			SealBaselineFields{SealBaseline: "2026-01-02T03:04:06.000000001Z"},
			EndFields{
				Status: StatusCompleted, Turns: 7, TrimmedTurns: 1, Timeouts: 1, Ended: "2026-01-02T03:10:00Z",
				Usage:          Usage{PromptTokens: 120000, CompletionTokens: 3100},
				StuckOn:        &StuckOn{Command: "go test ./...", Output: "FAIL\tpager\t0.01s", Repeats: 3},
				LastToolResult: &LastToolResult{Tool: "bash", Args: `{"command":"go test ./..."}`, Result: "exit code: 1\nFAIL"},
				Verify:         &VerifyResult{Command: "go test ./...", ExitCode: &exit, OutputTail: "FAIL", Rounds: 2},
			},
			ExportFields{
				DiffStat: " pager.go | 2 +-\n", ExportStatus: "ok", PatchPath: str("diff.patch"), WorktreeBytes: 40960,
				WorktreeFiles: 12, EscapingSymlinks: []string{}, DroppedGitEntries: []string{}, SkippedSpecialEntries: []string{},
				UnexportedEntries: []string{}, FilesChanged: []string{"pager.go"},
				IgnoredChanges: []IgnoredChange{{Path: "build/", Entries: 3, Bytes: 1024, By: ".gitignore", Action: "removed"}},
				ModeChanges:    []ModeChange{{Path: "run.sh", Mode: "100755", Base: "100644", Change: "executable"}},
				TreeHash:       "sha256:" + strings.Repeat("ab", 32),
			},
		},
		{FailureFields{Status: StatusSandboxError, Error: "the container died (OOM)", Ended: "2026-01-02T03:05:00Z"}},
	}
	var out [][]byte
	for _, fields := range records {
		m, err := patchMap(fields)
		if err != nil {
			f.Fatal(err)
		}
		_, data, err := encodeRecord(m)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// foldCollision reports whether an object anywhere in v holds two keys
// equal under Unicode case folding: encoding/json fills a struct field
// from every key that matches its name that way, the last in the text
// winning, so such a record's typed reading depends on the keys' order.
func foldCollision(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k, e := range x {
			for _, s := range keys {
				if strings.EqualFold(s, k) {
					return true
				}
			}
			keys = append(keys, k)
			if foldCollision(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if foldCollision(e) {
				return true
			}
		}
	}
	return false
}

// FuzzReadRun writes arbitrary bytes as run.json and reads them back as
// every reader does: ReadRun (typed) and ReadRecord (the object a
// read-merge-write keeps). Neither panics, and they agree: both refuse
// exactly what is not one JSON object, as corrupt, naming the path. A
// warning names only keys the file holds. The object writes back (as
// WriteRecord encodes it) to a file that reads as the same object and
// encodes to the same bytes again, and, when no two keys differ only in
// case, to the same typed record and warning.
func FuzzReadRun(f *testing.F) {
	for _, data := range fuzzRunRecords(f) {
		f.Add(data)
	}
	for _, s := range []string{
		`{"status": "completed", "verdict": "accept", "review_seconds": 30.0}`, // bench/testdata/runs
		`{"status":"completed","turns":"many","host_pid":true,"task":"t"}`,
		`{"status":"completed","context_window":1e400,"review_seconds":1e400,"usage":{"prompt_tokens":1.5}}`,
		`{"big":9007199254740993,"f":1.50,"s":"<&>","n":null,"a":[1,{"b":[]}]}`,
		`{"accepted_files":["a.go",null],"verify":{"exit_code":"1"},"stuck_on":[]}`,
		`{"status":"running","turns":2,"status":"completed","turns":3}`, // a hand-merged file: the last wins
		`[1]`, `{"a":1} {}`, `{`, ``, `null`, "{}\n\n", "\xef\xbb\xbf{}", `{"task":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	path := filepath.Join(dir, RecordName)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		rf, err := ReadRun(dir)
		rec, recErr := ReadRecord(dir)
		_, objErr := decodeObject(data)
		if (err == nil) != (objErr == nil) || (recErr == nil) != (objErr == nil) {
			t.Fatalf("ReadRun: %v, ReadRecord: %v, for a text that is one object: %v", err, recErr, objErr == nil)
		}
		if err != nil {
			if !errors.Is(err, ErrCorruptRecord) || !errors.Is(recErr, ErrCorruptRecord) || !strings.Contains(err.Error(), path) {
				t.Fatalf("refused as %v / %v", err, recErr)
			}
			return
		}
		if rf.Size != int64(len(data)) {
			t.Fatalf("size %d of %d bytes", rf.Size, len(data))
		}
		checkWarning(t, rf.Warning, rec)

		clean, written, err := encodeRecord(rec)
		if err != nil {
			t.Fatalf("a record read back does not encode: %v", err)
		}
		if !reflect.DeepEqual(clean, rec) {
			t.Fatalf("encoding changed the record:\n%#v\nwas\n%#v", clean, rec)
		}
		// What ReadRecord and ReadRun make of the file written back, in
		// memory: the file's reading was checked above.
		back, err := decodeObject(written)
		if err != nil || !reflect.DeepEqual(Record(back), rec) {
			t.Fatalf("the record written back reads as %#v (%v), was %#v", back, err, rec)
		}
		if _, again, err := encodeRecord(back); err != nil || string(again) != string(written) {
			t.Fatalf("encoding is not stable:\n%s\nthen\n%s (%v)", written, again, err)
		}
		if foldCollision(map[string]any(rec)) {
			return
		}
		if rec2, warning2 := decodeRun(written); !reflect.DeepEqual(rec2, rf.Record) || warning2 != rf.Warning {
			t.Fatalf("the record written back reads as %+v %q,\nwas %+v %q", rec2, warning2, rf.Record, rf.Warning)
		}
		if typedRec := typed(rec); !reflect.DeepEqual(typedRec, rf.Record) {
			t.Fatalf("UpdateRun's typed view %+v differs from ReadRun's %+v", typedRec, rf.Record)
		}
	})
}

// checkWarning asserts a warning names at least one key rec holds: a
// warning that names none tells the reader nothing it can fix.
func checkWarning(t *testing.T, warning string, rec Record) {
	t.Helper()
	if warning == "" {
		return
	}
	named := 0
	for k := range rec {
		if strings.Contains(warning, fmt.Sprintf("%q", k)) {
			named++
		}
	}
	if named == 0 {
		data, _ := json.Marshal(rec)
		t.Fatalf("warning %q names none of the keys of %s", warning, data)
	}
}
