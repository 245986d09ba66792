package tools

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/policy"
	"github.com/dirtywork/dirtywork/sandbox"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fakeWS records the calls it gets and answers from fields.
type fakeWS struct {
	calls   []string
	bash    sandbox.BashResult
	timeout time.Duration
	grep    sandbox.GrepArgs
	edits   []sandbox.Edit
	answer  string
	err     error
}

func (f *fakeWS) DisplayRoot() string { return "/wt" }
func (f *fakeWS) ReadFile(_ context.Context, p string, off, lim int) (string, error) {
	f.calls = append(f.calls, "read "+p+" "+itoa(off)+" "+itoa(lim))
	return f.answer, f.err
}

func (f *fakeWS) WriteFile(_ context.Context, p, c string) (string, error) {
	f.calls = append(f.calls, "write "+p)
	return f.answer, f.err
}

func (f *fakeWS) EditFile(_ context.Context, p, o, n string) (string, error) {
	f.calls = append(f.calls, "edit "+p)
	return f.answer, f.err
}

func (f *fakeWS) InsertText(_ context.Context, p, a, t string, after bool) (string, error) {
	f.calls = append(f.calls, "insert "+p)
	return f.answer, f.err
}

func (f *fakeWS) ApplyEdits(_ context.Context, p string, e []sandbox.Edit) (string, error) {
	f.calls = append(f.calls, "apply "+p)
	f.edits = e
	return f.answer, f.err
}

func (f *fakeWS) ListDir(_ context.Context, p string) (string, error) {
	f.calls = append(f.calls, "list "+p)
	return f.answer, f.err
}

func (f *fakeWS) Grep(_ context.Context, a sandbox.GrepArgs) (string, error) {
	f.calls = append(f.calls, "grep")
	f.grep = a
	return f.answer, f.err
}

func (f *fakeWS) Bash(_ context.Context, c string, t time.Duration) (sandbox.BashResult, error) {
	f.calls = append(f.calls, "bash "+c)
	f.timeout = t
	r := f.bash
	r.Timeout = t
	return r, f.err
}

func (f *fakeWS) Verify(ctx context.Context, c string, t time.Duration) (sandbox.VerifyRun, error) {
	r, err := f.Bash(ctx, c, t)
	return sandbox.VerifyRun{BashResult: r, Tree: "sha256:fake"}, err
}

func (f *fakeWS) Finalize(context.Context) (sandbox.Finalization, error) {
	return sandbox.Finalization{}, nil
}
func (f *fakeWS) Close() error { return nil }

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestSchemasWireFormatIsFrozen(t *testing.T) {
	var wire []any
	for _, tool := range Schemas() {
		wire = append(wire, map[string]any{
			"type": "function",
			"function": map[string]any{
				"name": tool.Name, "description": tool.Description, "parameters": tool.Parameters,
			},
		})
	}
	got, err := json.MarshalIndent(wire, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/schemas.json"
	if *update {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got)+"\n" != string(want) {
		t.Fatalf("tool schemas changed; if intended, run go test -run Schemas -update\n%s", got)
	}
	var names []string
	for _, tool := range Schemas() {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "read_file,write_file,edit_file,apply_edits,insert_before,insert_after,list_dir,grep,bash,finish" {
		t.Fatalf("order = %v", names)
	}
	if strings.Contains(string(got), `"timeout": {`) && strings.Count(string(got), `"timeout"`) != 1 {
		t.Fatalf("grep's hidden timeout leaked into the schema")
	}
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestExecuteValidation(t *testing.T) {
	edits := func(s string) string { return `{"path":"f","edits":` + s + `}` }
	tests := []struct {
		name, tool, args string
		want             string
		kind             string
	}{
		{"unknown tool", "frobnicate", `{}`, "ERROR: unknown tool 'frobnicate'. Available: read_file, write_file, edit_file, apply_edits, insert_before, insert_after, list_dir, grep, bash, finish. To end the run call finish(summary=...).", KindUnknownTool},
		{"missing required", "edit_file", `{"path":"f"}`, "ERROR: bad arguments for edit_file: missing required parameter(s): old_string, new_string", KindBadArgs},
		{"wrong scalar", "read_file", `{"path":3}`, "ERROR: bad arguments for read_file: path must be string, got int", KindBadArgs},
		{"bool is not numeric", "read_file", `{"path":"f","offset":true}`, "ERROR: bad arguments for read_file: offset must be integer, got bool", KindBadArgs},
		{"fraction is not integer", "read_file", `{"path":"f","limit":"1.5"}`, "ERROR: bad arguments for read_file: limit must be integer, got str", KindBadArgs},
		{"null not allowed", "list_dir", `{"path":null}`, "ERROR: bad arguments for list_dir: path must be string, got NoneType", KindBadArgs},
		{"edits not array", "apply_edits", edits(`"x"`), "ERROR: bad arguments for apply_edits: edits must be array, got str", KindBadArgs},
		{"edits empty", "apply_edits", edits(`[]`), "ERROR: bad arguments for apply_edits: edits must have at least 1 item(s)", KindBadArgs},
		{"edits too many", "apply_edits", edits(`[` + strings.TrimSuffix(strings.Repeat(`{"old":"a","new":"b"},`, 101), ",") + `]`), "ERROR: bad arguments for apply_edits: edits must have at most 100 item(s)", KindBadArgs},
		{"edit not object", "apply_edits", edits(`[1]`), "ERROR: bad arguments for apply_edits: edits[0] must be an object", KindBadArgs},
		{"edit missing property", "apply_edits", edits(`[{"old":"a","new":"b"},{"old":"a"}]`), "ERROR: bad arguments for apply_edits: edits[1] is missing required property 'new'", KindBadArgs},
		{"edit extra property", "apply_edits", edits(`[{"old":"a","new":"b"},{"old":"a","new":"b","note":"x"}]`), "ERROR: bad arguments for apply_edits: edits[1] has unexpected property 'note'", KindBadArgs},
		{"edit leaf type", "apply_edits", edits(`[{"old":"a","new":"b"},{"old":"a","new":"b"},{"old":"a","new":2}]`), "ERROR: bad arguments for apply_edits: edits[2].new must be string, got int", KindBadArgs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := &fakeWS{answer: "ok"}
			res, err := New(ws, policy.Options{}).Execute(t.Context(), tt.tool, decode(t, tt.args), time.Now().Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != tt.want || res.FailureKind != tt.kind {
				t.Fatalf("got %q (%s)\nwant %q (%s)", res.Text, res.FailureKind, tt.want, tt.kind)
			}
			if len(ws.calls) != 0 {
				t.Fatalf("workspace was called: %v", ws.calls)
			}
		})
	}
}

func TestExecuteCoercesDropsAndDefaults(t *testing.T) {
	ws := &fakeWS{answer: "content"}
	res, err := New(ws, policy.Options{}).Execute(t.Context(), ReadFile, decode(t, `{"path":"a.txt","offset":"60","bogus":1}`), time.Now().Add(time.Hour))
	if err != nil || res.Text != "content" || res.FailureKind != "" {
		t.Fatalf("%+v %v", res, err)
	}
	if ws.calls[0] != "read a.txt 60 400" {
		t.Fatalf("call = %q", ws.calls[0])
	}
	if _, ok := res.Args["bogus"]; ok {
		t.Fatal("unknown key kept")
	}
	ws = &fakeWS{answer: "hits"}
	if _, err := New(ws, policy.Options{}).Execute(t.Context(), Grep, decode(t, `{"pattern":"x","glob":null}`), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ws.grep != (sandbox.GrepArgs{Pattern: "x", Path: ".", Glob: "", Timeout: 30 * time.Second}) {
		t.Fatalf("grep args = %+v", ws.grep)
	}
}

func TestApplyEditsInputCap(t *testing.T) {
	big := strings.Repeat("é", 1<<20) // 2 MiB of UTF-8; with "x" and the path "f", 2 bytes over
	args := map[string]any{"path": "f", "edits": []any{map[string]any{"old": big, "new": "x"}}}
	res, err := New(&fakeWS{}, policy.Options{}).Execute(t.Context(), ApplyEdits, args, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := "ERROR: bad arguments for apply_edits: input is 2097154 bytes, over the 2097152-byte limit."
	if res.Text != want || res.FailureKind != KindBadArgs {
		t.Fatalf("got %q", res.Text)
	}
	ws := &fakeWS{answer: "Applied 1 edit to f"}
	res, _ = New(ws, policy.Options{}).Execute(t.Context(), ApplyEdits, decode(t, `{"path":"f","edits":[{"old":"a","new":"b"}]}`), time.Time{})
	if !res.Mutated || len(ws.edits) != 1 || ws.edits[0] != (sandbox.Edit{Old: "a", New: "b"}) {
		t.Fatalf("apply_edits dispatch: %+v %+v", res, ws.edits)
	}
}

func TestDeadlineAndTimeoutInjection(t *testing.T) {
	ws := &fakeWS{}
	r := New(ws, policy.Options{})
	res, _ := r.Execute(t.Context(), Bash, map[string]any{"command": "true"}, time.Now().Add(-time.Second))
	if res.Text != "ERROR: run deadline exceeded; stop calling tools and summarize what you have done." || res.FailureKind != "" || len(ws.calls) != 0 {
		t.Fatalf("expired deadline: %+v calls %v", res, ws.calls)
	}
	tests := []struct {
		requested any
		left      time.Duration
		want      time.Duration
	}{
		{9999, time.Hour, 600 * time.Second},
		{nil, time.Hour, 120 * time.Second},
		{0, time.Hour, time.Second},
		{300, 45*time.Second + 700*time.Millisecond, 45 * time.Second},
		{300, 300 * time.Millisecond, time.Second},
	}
	for _, tt := range tests {
		ws := &fakeWS{bash: sandbox.BashResult{ExitCode: 0}}
		args := map[string]any{"command": "true"}
		if tt.requested != nil {
			args["timeout"] = tt.requested
		}
		res, err := New(ws, policy.Options{}).Execute(t.Context(), Bash, args, time.Now().Add(tt.left))
		if err != nil {
			t.Fatal(err)
		}
		if ws.timeout != tt.want || res.Args["timeout"] != int(tt.want/time.Second) {
			t.Errorf("requested %v with %v left: ran with %v (args %v), want %v", tt.requested, tt.left, ws.timeout, res.Args["timeout"], tt.want)
		}
	}
}

func TestBashResults(t *testing.T) {
	tests := []struct {
		name string
		br   sandbox.BashResult
		want string
	}{
		{"exit code", sandbox.BashResult{ExitCode: 3, Output: "  boom\n"}, "exit code: 3\nboom"},
		{"timeout", sandbox.BashResult{ExitCode: -1, TimedOut: true, Output: "partial"}, "ERROR: command timed out after 5s — it did not finish and its result is unknown. Re-run it with a larger timeout (up to 600 s) or split it into smaller steps; do not treat it as a pass."},
		{"launch failure", sandbox.BashResult{ExitCode: -1, LaunchError: "no bash"}, "ERROR: bash failed: no bash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := &fakeWS{bash: tt.br}
			res, err := New(ws, policy.Options{}).Execute(t.Context(), Bash, map[string]any{"command": "x", "timeout": 5}, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != tt.want {
				t.Fatalf("got %q", res.Text)
			}
			if res.TimedOut != tt.br.TimedOut || !policy.IsTimeout(res.Text) == tt.br.TimedOut {
				t.Fatalf("timed out flag/predicate disagree: %+v", res)
			}
		})
	}
	long := strings.Repeat("ü", 12000)
	got := FormatBash(sandbox.BashResult{Output: long})
	if !strings.HasSuffix(got, "\n[output truncated at 10000 chars]") || len([]rune(got)) != len([]rune("exit code: 0\n"))+10000+len([]rune("\n[output truncated at 10000 chars]")) {
		t.Fatalf("rune cap wrong: %d runes, tail %q", len([]rune(got)), got[len(got)-40:])
	}
	got = FormatBash(sandbox.BashResult{Output: long, Capped: true})
	if !strings.HasSuffix(got, "\n[output truncated at 10000 chars — bash output capped]") {
		t.Fatalf("capped note missing: %q", got[len(got)-60:])
	}
}

func TestBlockedCommandsNeverRun(t *testing.T) {
	ws := &fakeWS{}
	r := New(ws, policy.Options{Mode: policy.Host, Worktrees: []string{"/wt"}})
	res, err := r.Execute(t.Context(), Bash, map[string]any{"command": "git push origin main"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Blocked || !strings.HasPrefix(res.Text, "BLOCKED: git push is not allowed") || res.FailureKind != "" || len(ws.calls) != 0 {
		t.Fatalf("%+v calls %v", res, ws.calls)
	}
	if res.Args["timeout"] != 120 {
		t.Fatalf("block args lack the injected timeout: %v", res.Args)
	}
}

func TestOuterCapAndErrorsPropagate(t *testing.T) {
	ws := &fakeWS{answer: strings.Repeat("x", 9000)}
	res, _ := New(ws, policy.Options{}).Execute(t.Context(), ListDir, map[string]any{}, time.Time{})
	if !strings.HasSuffix(res.Text, "\n[output truncated at 8512 chars]") {
		t.Fatalf("outer cap missing")
	}
	ws = &fakeWS{err: &sandbox.BudgetError{Reason: "worktree exceeds 1 MB"}}
	_, err := New(ws, policy.Options{}).Execute(t.Context(), WriteFile, map[string]any{"path": "a", "content": "b"}, time.Time{})
	if !sandbox.IsBudget(err) {
		t.Fatalf("budget error lost: %v", err)
	}
	ws = &fakeWS{answer: "ERROR: cannot write 'a': boom"}
	res, _ = New(ws, policy.Options{}).Execute(t.Context(), WriteFile, map[string]any{"path": "a", "content": "b"}, time.Time{})
	if res.Mutated {
		t.Fatal("a failed write counted as a mutation")
	}
}

func TestCanonical(t *testing.T) {
	tests := []struct {
		tool string
		args any
		want string
	}{
		{ReadFile, map[string]any{"path": "./f.txt"}, `{"limit":400,"offset":0,"path":"f.txt"}`},
		{ReadFile, map[string]any{"path": "f.txt/", "offset": "0", "extra": 1}, `{"limit":400,"offset":0,"path":"f.txt"}`},
		{ListDir, map[string]any{"path": "  "}, `{"path":"."}`},
		{Bash, map[string]any{"command": " ls ", "timeout": 5}, `{"command":"ls"}`},
		{Grep, "not an object", `{"glob":null,"path":".","pattern":null}`},
		{"mystery", map[string]any{"b": 1, "a": 2}, `{"a":2,"b":1}`},
	}
	for _, tt := range tests {
		if got := Canonical(tt.tool, tt.args); got != tt.want {
			t.Errorf("Canonical(%s, %v) = %s, want %s", tt.tool, tt.args, got, tt.want)
		}
	}
}
