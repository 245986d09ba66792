package transcript

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// keysOf writes ev and returns the sorted keys of its line.
func keysOf(t *testing.T, ev Event) ([]string, map[string]any) {
	t.Helper()
	lines := writeAndRead(t, ev)
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1", len(lines))
	}
	m := lineObject(t, lines[0])
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, m
}

func sortedKeys(keys ...string) []string {
	keys = append([]string{"ts", "event"}, keys...)
	slices.Sort(keys)
	return keys
}

// runStartKeys are the run_start keys of engine contract E-23.
var runStartKeys = []string{
	"task", "model", "max_turns", "timeout", "context_window", "context_window_source",
	"schema_version", "repo", "worktree", "branch", "branch_from", "base_commit", "base_url",
	"dirtywork_version", "temperature", "sandbox", "provider", "resumed_from", "feedback",
}

// runEndKeys are the keys of a runner's run_end (E-23) before finalize.
var runEndKeys = []string{
	"status", "turns", "duration_s", "usage", "stuck_on", "last_tool_result",
	"last_assistant_text", "verify", "trimmed_turns", "timeouts", "context_window_source",
}

// artifactKeys are the finalize fields of a runner's run_end.
var artifactKeys = []string{
	"diff_stat", "untracked", "files_changed", "files_changed_truncated", "patch_path",
	"worktree_bytes", "worktree_files", "escaping_symlinks", "dropped_git_entries",
	"skipped_special_entries", "unexported_entries", "export_status", "watchdog_violation", "watchdog_violation_kind",
	"ignored_changes", "mode_changes", "tree_hash",
}

func TestRunStartKeys(t *testing.T) {
	t.Run("host run, unset optionals", func(t *testing.T) {
		keys, m := keysOf(t, RunStart{Task: "fix it", Model: "m", ContextWindow: 65536})
		if want := sortedKeys(runStartKeys...); !slices.Equal(keys, want) {
			t.Fatalf("keys:\n got %v\nwant %v", keys, want)
		}
		for _, k := range []string{"temperature", "branch_from", "resumed_from", "feedback"} {
			if v, ok := m[k]; !ok || v != nil {
				t.Errorf("%s = %v (present %v), want null", k, v, ok)
			}
		}
		if m["sandbox"] != SandboxNone {
			t.Errorf("sandbox = %v, want %q", m["sandbox"], SandboxNone)
		}
		if m["schema_version"] != json.Number("2") {
			t.Errorf("schema_version = %v, want 2", m["schema_version"])
		}
	})
	t.Run("docker run with base_ref", func(t *testing.T) {
		temp, from := Float(0.2), "main"
		keys, m := keysOf(t, RunStart{
			Temperature: &temp, BranchFrom: &from, BaseRef: "main",
			Sandbox: map[string]any{"backend": "docker", "image": "img"},
		})
		if want := sortedKeys(append(slices.Clone(runStartKeys), "base_ref")...); !slices.Equal(keys, want) {
			t.Fatalf("keys:\n got %v\nwant %v", keys, want)
		}
		if m["temperature"] != json.Number("0.2") || m["branch_from"] != "main" {
			t.Errorf("temperature = %v, branch_from = %v", m["temperature"], m["branch_from"])
		}
		if sb, ok := m["sandbox"].(map[string]any); !ok || sb["backend"] != "docker" {
			t.Errorf("sandbox = %v, want the docker object", m["sandbox"])
		}
	})
}

func TestRunEndKeys(t *testing.T) {
	patch := "/runs/x/diff.patch"
	tests := []struct {
		name  string
		event Event
		want  []string
	}{
		{
			"host finalize",
			RunEnd{Status: "completed", Artifacts: &Artifacts{ExportStatus: "n/a"}},
			append(slices.Clone(runEndKeys), artifactKeys...),
		},
		{
			"docker finalize",
			RunEnd{Status: "completed", Artifacts: &Artifacts{PatchPath: &patch, ExportStatus: "ok"}},
			append(slices.Clone(runEndKeys), artifactKeys...),
		},
		{
			"finalize raised",
			RunEnd{Status: "export_failed", FinalizeError: "OSError: boom"},
			append(slices.Clone(runEndKeys), "finalize_error"),
		},
		{
			"additive fields",
			RunEnd{Status: "completed", Artifacts: &Artifacts{}, Setup: &Setup{Command: "npm ci"}, PrefixReuse: new(0)},
			append(slices.Clone(runEndKeys), append(slices.Clone(artifactKeys), "setup", "prefix_reuse")...),
		},
		{
			"failure path",
			RunEndFailure{Status: "sandbox_error", Error: "no docker"},
			[]string{"status", "error", "trimmed_turns", "timeouts", "context_window_source"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keys, _ := keysOf(t, tc.event)
			if want := sortedKeys(tc.want...); !slices.Equal(keys, want) {
				t.Fatalf("keys:\n got %v\nwant %v", keys, want)
			}
		})
	}
}

func TestRunEndValues(t *testing.T) {
	_, m := keysOf(t, RunEnd{
		Status:    "completed",
		DurationS: 12.36,
		Artifacts: &Artifacts{ExportStatus: "n/a"},
		Setup:     &Setup{Command: "make", DurationS: 0.04},
	})
	if m["duration_s"] != json.Number("12.4") {
		t.Errorf("duration_s = %v, want 12.4 (one decimal)", m["duration_s"])
	}
	if setup := m["setup"].(map[string]any); setup["duration_s"] != json.Number("0") || setup["exit_code"] != nil {
		t.Errorf("setup = %v, want duration 0 and exit_code null", setup)
	}
	for _, k := range []string{"files_changed", "escaping_symlinks", "dropped_git_entries"} {
		if l, ok := m[k].([]any); !ok || len(l) != 0 {
			t.Errorf("%s = %#v, want []", k, m[k])
		}
	}
	for _, k := range []string{"patch_path", "watchdog_violation", "watchdog_violation_kind", "stuck_on", "last_tool_result", "last_assistant_text", "verify"} {
		if v, ok := m[k]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", k, v, ok)
		}
	}
	if u := m["usage"].(map[string]any); u["prompt_tokens"] != json.Number("0") || u["completion_tokens"] != json.Number("0") {
		t.Errorf("usage = %v", u)
	}
}

func TestOptionalKeys(t *testing.T) {
	tests := []struct {
		name    string
		event   Event
		key     string
		present bool
		want    string // JSON of the value when present
	}{
		{"timed_out absent", ToolResult{Tool: "bash"}, "timed_out", false, ""},
		{"timed_out true", ToolResult{Tool: "bash", TimedOut: true}, "timed_out", true, "true"},
		{"tool_calls never null", Assistant{Text: "x"}, "tool_calls", true, "[]"},
		{"assistant usage absent", Assistant{}, "usage", false, ""},
		{"assistant usage", Assistant{Usage: &Usage{PromptTokens: 3, CompletionTokens: 4}}, "usage", true, `{"prompt_tokens":3,"completion_tokens":4}`},
		{"verify exit_code null", Verify{Round: 1}, "exit_code", true, "null"},
		{"guardrail args never null", GuardrailBlock{Tool: "bash"}, "args", true, "{}"},
		{"base_ref absent", RunStart{}, "base_ref", false, ""},
		{"finalize_error absent", RunEnd{}, "finalize_error", false, ""},
		{"prefix_reuse absent", RunEnd{}, "prefix_reuse", false, ""},
		{"prefix_reuse zero", RunEnd{PrefixReuse: new(0)}, "prefix_reuse", true, "0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lines := writeAndRead(t, tc.event)
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
				t.Fatal(err)
			}
			v, ok := m[tc.key]
			if ok != tc.present {
				t.Fatalf("%s present = %v, want %v: %s", tc.key, ok, tc.present, lines[0])
			}
			if ok && string(v) != tc.want {
				t.Fatalf("%s = %s, want %s", tc.key, v, tc.want)
			}
		})
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	temp, from, slug, fb, patch, kind := Float(0.5), "main", "prior-slug", "fix the footer", "/p", "budget"
	code, reuse := 3, 7
	text := "last words"
	events := []Event{
		RunStart{
			Task: "t", Model: "m", MaxTurns: 40, Timeout: 1800, ContextWindow: 65536,
			ContextWindowSource: "flag", SchemaVersion: 2, Repo: "/r", Worktree: "/r/.worktrees/dw-x",
			Branch: "dirtywork/x", BranchFrom: &from, BaseCommit: "abc", BaseURL: "http://localhost:1234/v1",
			DirtyworkVersion: "0.1.0", Temperature: &temp, Sandbox: map[string]any{"backend": "docker", "cpus": 2.0},
			Provider: "openai", ResumedFrom: &slug, Feedback: &fb, BaseRef: "main",
		},
		RunStart{Task: "host", SchemaVersion: 2, Sandbox: SandboxNone},
		ModelRequest{Turn: 2, EstPromptTokens: 1234},
		ModelProgress{Turn: 2, Tokens: 50, TokensPerS: 12.5},
		Assistant{Text: "calling", ToolCalls: []ToolCallRecord{{Name: "read_file", Arguments: `{"path":"a"}`}}, Usage: &Usage{1, 2}},
		Assistant{Text: "", ToolCalls: []ToolCallRecord{}},
		ToolResult{Tool: "bash", Args: `{"command":"sleep 900"}`, Result: "ERROR: command timed out after 1s", TimedOut: true},
		GuardrailBlock{Tool: "bash", Args: map[string]any{"command": "sudo x", "timeout": 120.0}, Reason: "BLOCKED: sudo is not allowed."},
		Nudge{Kind: NudgeTextToolCall, Turn: 4},
		SandboxReset{Reason: "stray process after bash"},
		Verify{Round: 1, ExitCode: &code, Passed: false},
		RunEnd{
			Status: "stuck", Turns: 9, DurationS: 3.2, Usage: Usage{100, 20},
			StuckOn:           &StuckOn{Command: "make", Output: "exit code: 2", Repeats: 4},
			LastToolResult:    &LastToolResult{Tool: "bash", Args: "{}", Result: "exit code: 2"},
			LastAssistantText: &text, Verify: &VerifyResult{Command: "make test", ExitCode: &code, OutputTail: "FAIL", Rounds: 2},
			TrimmedTurns: 1, Timeouts: 2, ContextWindowSource: "default",
			Artifacts: &Artifacts{
				DiffStat: " a | 1 +", FilesChanged: []string{"a"}, PatchPath: &patch,
				WorktreeBytes: 1 << 40, WorktreeFiles: 3, EscapingSymlinks: []string{"l"}, DroppedGitEntries: []string{"sub/.git"},
				ExportStatus: "ok", WatchdogViolation: &text, WatchdogViolationKind: &kind,
			},
			Setup: &Setup{Command: "npm ci", ExitCode: &code, Output: "ok", DurationS: 1.5}, PrefixReuse: &reuse,
		},
		RunEnd{Status: "export_failed", Turns: 1, FinalizeError: "OSError: disk full"},
		RunEndFailure{Status: "model_error", Error: "unexpected error: boom", TrimmedTurns: 1, Timeouts: 0, ContextWindowSource: "env"},
	}
	w, path := newTestWriter(t)
	for _, ev := range events {
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	lines, problems, err := ReadFile(path)
	if err != nil || len(problems) > 0 {
		t.Fatalf("ReadFile: %v %v", err, problems)
	}
	if len(lines) != len(events) {
		t.Fatalf("read %d lines, want %d", len(lines), len(events))
	}
	for i, line := range lines {
		got, err := line.Decode()
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		want := events[i]
		if n, ok := want.(normalizer); ok {
			want = n.normalized()
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("line %d round trip:\n got %#v\nwant %#v", i+1, got, want)
		}
		if !line.TS.Equal(testTime.Truncate(time.Microsecond)) || line.Event != want.EventName() || line.Number != i+1 {
			t.Errorf("line %d: TS %v Event %q Number %d", i+1, line.TS, line.Event, line.Number)
		}
	}
}

func TestDecodeUnknownEvent(t *testing.T) {
	src := `{"ts":"` + testTS + `","event":"future_event","n":12345678901234567890,"obj":{"a":[1,2]}}` + "\n"
	lines, problems, err := Read(strings.NewReader(src))
	if err != nil || len(problems) != 0 || len(lines) != 1 {
		t.Fatalf("Read: %v %v %d lines", err, problems, len(lines))
	}
	ev, err := lines[0].Decode()
	if err != nil {
		t.Fatalf("Decode of an unknown event failed: %v", err)
	}
	u, ok := ev.(Unknown)
	if !ok {
		t.Fatalf("decoded %T, want Unknown", ev)
	}
	want := Unknown{Name: "future_event", Fields: map[string]json.RawMessage{
		"n": json.RawMessage(`12345678901234567890`), "obj": json.RawMessage(`{"a":[1,2]}`),
	}}
	if !reflect.DeepEqual(u, want) {
		t.Fatalf("got %#v\nwant %#v", u, want)
	}
	// Written back, it is the same line: nothing lost, numbers exact.
	if got := writeAndRead(t, u); got[0]+"\n" != src {
		t.Fatalf("rewritten:\n got %s\nwant %s", got[0], src)
	}
}

func TestDecodeRunEndShape(t *testing.T) {
	tests := []struct {
		line string
		want Event
	}{
		{`{"ts":"` + testTS + `","event":"run_end","status":"completed","turns":2}`, RunEnd{Status: "completed", Turns: 2}},
		{`{"ts":"` + testTS + `","event":"run_end","status":"model_error","turns":null}`, RunEnd{Status: "model_error"}},
		{`{"ts":"` + testTS + `","event":"run_end","status":"sandbox_error","error":"e","timeouts":1}`, RunEndFailure{Status: "sandbox_error", Error: "e", Timeouts: 1}},
	}
	for _, tc := range tests {
		lines, _, _ := Read(strings.NewReader(tc.line + "\n"))
		got, err := lines[0].Decode()
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %#v\nwant %#v", tc.line, got, tc.want)
		}
	}
}

func TestDecodeWrongFieldTypes(t *testing.T) {
	line := Line{Number: 7, Event: EventRunEnd, Raw: json.RawMessage(`{"status":"completed","turns":"many"}`)}
	ev, err := line.Decode()
	if err == nil {
		t.Fatal("Decode accepted a string turn count")
	}
	if !strings.Contains(err.Error(), "run_end") || !strings.Contains(err.Error(), "line 7") {
		t.Errorf("error %q does not name the event and line", err)
	}
	if re, ok := ev.(RunEnd); !ok || re.Status != "completed" {
		t.Errorf("partial event = %#v, want a RunEnd with its status", ev)
	}
}

func TestSetupEvent(t *testing.T) {
	code := 0
	var buf bytes.Buffer
	line, err := marshalJSON(Setup{Command: "npm ci", ExitCode: &code, Output: "ok", DurationS: 1.26})
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(line)
	if got := buf.String(); got != `{"command":"npm ci","exit_code":0,"output":"ok","duration_s":1.26}` {
		t.Fatalf("fields: %s", got)
	}
	path := filepath.Join(t.TempDir(), "t.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Setup{Command: "npm ci", ExitCode: &code, Output: "ok", DurationS: 1.26}); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	lines, problems, err := ReadFile(path)
	if err != nil || len(problems) != 0 || len(lines) != 1 || lines[0].Event != EventSetup {
		t.Fatalf("%v %v %v", lines, problems, err)
	}
	ev, err := lines[0].Decode()
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := ev.(Setup); !ok || s.DurationS != 1.3 || *s.ExitCode != 0 {
		t.Fatalf("decoded %#v", ev)
	}
}
