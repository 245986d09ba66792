package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dirtywork/dirtywork/transcript"
)

// trick is worker text with what a terminal acts on: an OSC 52 clipboard
// write, a line erase, a carriage return, a one-byte C1 CSI, a bidi
// override and DEL. It holds no '/', so it can be a file name too.
const trick = "pwned\x1b]52;c;cHduZWQ=\x07\x1b[2K\r\u009b31m\u202eevil\x7f"

// actedOn returns the first character in out a terminal would act on
// (every control but newline and tab, DEL, the C1 controls and the
// bidirectional formatting characters) and whether out holds one; bytes
// that are not UTF-8 count too.
func actedOn(out []byte) (string, bool) {
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRune(out[i:])
		switch {
		case r == utf8.RuneError && size == 1,
			r < 0x20 && r != '\n' && r != '\t', r == 0x7f, r >= 0x80 && r <= 0x9f,
			r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return string(out[i : i+size]), true
		}
		i += size
	}
	return "", false
}

// assertInert fails when out holds something a terminal acts on.
func assertInert(t *testing.T, what string, out []byte) {
	t.Helper()
	if c, ok := actedOn(out); ok {
		i := bytes.Index(out, []byte(c))
		t.Errorf("%s: %q is printed raw: %q", what, c, out[max(0, i-200):min(len(out), i+100)])
	}
}

// holds reports whether the decoded JSON value v has a key or a string
// that contains want.
func holds(v any, want string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, want)
	case []any:
		for _, e := range v {
			if holds(e, want) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.Contains(k, want) || holds(e, want) {
				return true
			}
		}
	}
	return false
}

// assertSafeJSON checks one printed JSON document: one line, nothing a
// terminal acts on, and, when carries, decoding gives back trick exactly.
func assertSafeJSON(t *testing.T, what string, out []byte, carries bool) {
	t.Helper()
	assertInert(t, what, out)
	if !bytes.HasSuffix(out, []byte("\n")) || bytes.Count(out, []byte("\n")) != 1 {
		t.Errorf("%s: not one line of JSON: %q", what, out)
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s: not JSON: %v\n%q", what, err, out)
	}
	if carries && !holds(v, trick) {
		t.Errorf("%s: decoding does not give the worker's text back:\n%s", what, out)
	}
}

// hostileE2E is an end-to-end run whose repository and home paths, task,
// file name, file content, assistant text and final message all carry
// trick. The file's lines end in CRLF, so its neutralised diff differs
// from the patch.
func hostileE2E(t *testing.T) (*e2e, map[string]any, []byte) {
	t.Helper()
	write, err := json.Marshal(map[string]any{"path": "note" + trick + ".txt", "content": "one\r\n" + trick + "\r\n"})
	if err != nil {
		t.Fatal(err)
	}
	script, err := json.Marshal(map[string]any{"model": "scripted/" + trick, "turns": []any{
		map[string]any{"text": trick, "tool_calls": []any{map[string]any{"name": "write_file", "arguments": json.RawMessage(write)}}},
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
	e.repo, e.home = hostileRepo, filepath.Join(filepath.Dir(e.home), "home"+trick)
	out, errOut, code, err := runCLIProcess(t, "", []string{"DIRTYWORK_HOME=" + e.home},
		"run", "--sandbox", "none", "--repo", e.repo, "--base-url", e.base, "--model", "scripted/"+trick,
		"--context-window", "32768", "fix "+trick)
	if err != nil {
		t.Fatal(err)
	}
	if code != ExitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	assertSafeJSON(t, "run", []byte(out), true)
	assertInert(t, "run's stderr", []byte(errOut))
	var payload map[string]any
	if err := json.Unmarshal([]byte(out), &payload); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"final_message", "last_assistant_text"} {
		if payload[k] != trick {
			t.Errorf("%s = %q, want %q", k, payload[k], trick)
		}
	}
	return e, payload, []byte(out)
}

// cli runs dirtywork as a process in e's home and returns its output.
func (e *e2e) cli(args ...string) (stdout, stderr []byte, code int) {
	e.t.Helper()
	out, errOut, code, err := runCLIProcess(e.t, "", []string{"DIRTYWORK_HOME=" + e.home}, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	return []byte(out), []byte(errOut), code
}

// TestEveryJSONOutputIsTerminalSafe walks every code path that prints
// JSON with worker text in it: what is printed holds no character a
// terminal acts on, and decodes to the worker's exact text.
func TestEveryJSONOutputIsTerminalSafe(t *testing.T) {
	e, payload, _ := hostileE2E(t)
	slug := filepath.Base(payload["run_dir"].(string))

	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		carries bool // the worker's text is in the document
	}{
		{"runs wait (result.json)", []string{"runs", "wait", slug}, ExitOK, true},
		{"runs show --json", []string{"runs", "show", slug, "--json"}, ExitOK, true},
		{"runs show --json --diff", []string{"runs", "show", slug, "--json", "--diff"}, ExitOK, true},
		{"runs list --json", []string{"runs", "list", "--json"}, ExitOK, false},
		{"lane list --json", []string{"lane", "list", "--repo", e.repo, "--json"}, ExitOK, true},
		{"runs merge --dry-run --json", []string{"runs", "merge", slug, "--dry-run", "--json"}, ExitOK, true},
		{"doctor --json", []string{"doctor", "--json", "--base-url", e.base, "--model", "scripted/" + trick}, -1, true},
		{"runs accept --json", []string{"runs", "accept", slug, "--json"}, ExitOK, true},
		{"runs snapshot --json", []string{"runs", "snapshot", slug, "--json"}, ExitOK, false},
	} {
		out, errOut, code := e.cli(tc.args...)
		if tc.code >= 0 && code != tc.code {
			t.Fatalf("%s: exit %d\n%s%s", tc.name, code, out, errOut)
		}
		assertSafeJSON(t, tc.name, out, tc.carries)
		assertInert(t, tc.name+": stderr", errOut)
	}

	// A detached run's announcement, its result by runs wait, and a resume
	// of it (it ends max_turns: no feedback needed).
	out, errOut, code := e.cli("run", "--detach", "--sandbox", "none", "--repo", e.repo, "--base-url", e.base,
		"--model", "scripted/"+trick, "--context-window", "32768", "--max-turns", "1", "once more "+trick)
	if code != ExitOK {
		t.Fatalf("run --detach: exit %d\n%s%s", code, out, errOut)
	}
	assertSafeJSON(t, "run --detach", out, true)
	assertInert(t, "run --detach: stderr", errOut)
	var started struct{ Slug string }
	if err := json.Unmarshal(out, &started); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = e.cli("runs", "wait", started.Slug)
	if code != ExitRunNotCompleted {
		t.Fatalf("runs wait: exit %d\n%s%s", code, out, errOut)
	}
	assertSafeJSON(t, "runs wait (a detached run)", out, true)
	out, errOut, code = e.cli("resume", started.Slug, "--base-url", e.base, "--context-window", "32768", "--feedback", "again "+trick)
	if code != ExitOK {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	assertSafeJSON(t, "resume", out, true)
	assertInert(t, "resume: stderr", errOut)

	// dev model-server prints its model id (the script's) once it listens.
	script, err := json.Marshal(map[string]any{"model": "m" + trick, "turns": []any{map[string]any{"finish": "done"}}})
	if err != nil {
		t.Fatal(err)
	}
	scriptFile := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(scriptFile, script, 0o600); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	startCLI(t, "", nil, w, nil, "dev", "model-server", "--script", scriptFile)
	_ = w.Close()
	line, err := bufio.NewReader(r).ReadBytes('\n')
	_ = r.Close()
	if err != nil {
		t.Fatalf("dev model-server printed no line: %v %q", err, line)
	}
	assertSafeJSON(t, "dev model-server", line, true)
}

// TestRunsWaitEscapesAnyResult: the JSON runs wait prints is safe whatever
// the run dir holds: a result.json an older dirtywork wrote with the
// worker's text raw, and a run that died without one (its run.json's
// fields in the object).
func TestRunsWaitEscapesAnyResult(t *testing.T) {
	root := runsHome(t)
	kept := putRun(t, root, "kept-0102030405-aaaaaaaa", transcript.Record{"status": "max_turns"})
	raw := []byte(`{"status":"max_turns","final_message":"` + strings.NewReplacer("\x1b", `\u001b`, "\x07", `\u0007`, "\r", `\r`).Replace(trick) + `"}` + "\n")
	if !bytes.Contains(raw, []byte("\u009b")) {
		t.Fatal("the old result is not raw")
	}
	if err := os.WriteFile(filepath.Join(kept, "result.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	putRun(t, root, "dead-0102030405-bbbbbbbb", transcript.Record{"status": "running", "branch": "dirtywork/" + trick, "worktree": "/w/" + trick})
	for _, slug := range []string{"kept-0102030405-aaaaaaaa", "dead-0102030405-bbbbbbbb"} {
		out, errOut, code := runMain(t, "runs", "wait", slug)
		if code != ExitRunNotCompleted {
			t.Fatalf("%s: exit %d\n%s%s", slug, code, out, errOut)
		}
		assertSafeJSON(t, "runs wait "+slug, []byte(out), true)
	}
}

// TestTextOutputIsNeutralisedOnAPipe: text that quotes the worker is
// neutralised whether or not it goes to a terminal: a pipe (less -R shows
// escapes), a file written with --out.
func TestTextOutputIsNeutralisedOnAPipe(t *testing.T) {
	e, payload, _ := hostileE2E(t)
	slug := filepath.Base(payload["run_dir"].(string))
	for _, args := range [][]string{
		{"runs", "list"},
		{"runs", "show", slug},
		{"runs", "show", slug, "--diff"},
		{"runs", "show", slug, "--markdown"},
		{"runs", "show", slug, "--markdown", "--diff"},
		{"lane", "list", "--repo", e.repo},
		{"runs", "merge", slug, "--dry-run"},
		{"runs", "accept", slug},
		{"runs", "snapshot", slug},
		{"runs", "show", "no-such-run-" + trick},
		{"run", "--repo", filepath.Join(e.repo, "missing"+trick), "task"},
	} {
		name := fmt.Sprintf("%q", args) // the test's log is read on a terminal too
		out, errOut, code := e.cli(args...)
		t.Logf("%s: exit %d", name, code)
		assertInert(t, name, out)
		assertInert(t, name+": stderr", errOut)
	}
	doc := filepath.Join(t.TempDir(), "review.md")
	if _, errOut, code := e.cli("runs", "show", slug, "--markdown", "--diff", "--out", doc); code != ExitOK {
		t.Fatalf("--out: exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	assertInert(t, "--markdown --out", data)
	if !bytes.Contains(data, []byte("pwned␛]52;c;cHduZWQ=␇␛[2K␍\\u009b31m\\u202eevil␡")) {
		t.Errorf("the document does not show the worker's text visibly:\n%s", data)
	}
}

// TestRunsShowRawIsTheWorkerBytes: --raw is the one way to the exact
// bytes. With --diff it prints the patch alone, byte-identical to the
// run's diff.patch and applicable, where the neutralised diff is not (its
// CRs are shown as ␍); with --markdown, the document unneutralised.
func TestRunsShowRawIsTheWorkerBytes(t *testing.T) {
	e, payload, _ := hostileE2E(t)
	slug := filepath.Base(payload["run_dir"].(string))
	patch, err := os.ReadFile(filepath.Join(payload["run_dir"].(string), "diff.patch"))
	if err != nil {
		t.Fatal(err)
	}
	raw, errOut, code := e.cli("runs", "show", slug, "--diff", "--raw")
	if code != ExitOK || !bytes.Equal(raw, patch) {
		t.Fatalf("--diff --raw (exit %d, %s) is not diff.patch:\n%q\nwant\n%q", code, errOut, raw, patch)
	}
	shown, _, _ := e.cli("runs", "show", slug, "--diff")
	if bytes.Contains(shown, raw) {
		t.Error("the neutralised diff holds the raw patch")
	}
	// The repository is still at the base commit: the raw patch applies.
	apply := exec.Command("git", "-C", e.repo, "apply", "--check", "-")
	apply.Stdin = bytes.NewReader(raw)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Errorf("git apply --check of --diff --raw: %v\n%s", err, out)
	}

	md, _, code := e.cli("runs", "show", slug, "--markdown", "--raw")
	if code != ExitOK || !bytes.Contains(md, []byte(trick)) {
		t.Errorf("--markdown --raw (exit %d) does not hold the worker's bytes:\n%q", code, md)
	}
	doc := filepath.Join(t.TempDir(), "raw.md")
	if _, _, code := e.cli("runs", "show", slug, "--markdown", "--raw", "--out", doc); code != ExitOK {
		t.Fatalf("--markdown --raw --out: exit %d", code)
	}
	if data, err := os.ReadFile(doc); err != nil || !bytes.Equal(data, md) {
		t.Errorf("--markdown --raw --out wrote %q (%v), want what stdout got", data, err)
	}

	for _, args := range [][]string{
		{"runs", "show", slug, "--raw"},
		{"runs", "show", slug, "--json", "--raw"},
		{"runs", "show", slug, "--json", "--diff", "--raw"},
	} {
		if out, errOut, code := e.cli(args...); code != ExitUsage || len(out) != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want a usage error", args, code, out, errOut)
		}
	}
}

// A patch that only exists as diff.patch (a docker run's worktree never
// got its tree) is printed by --diff --raw exactly as the file holds it.
func TestRunsShowRawPrintsDiffPatchExactly(t *testing.T) {
	root := runsHome(t)
	patch := "diff --git a/x.txt b/x.txt\n--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\r\n+" + trick + "\r\n"
	dir := putRun(t, root, "patch-0102030405-cccccccc", transcript.Record{
		"status": "completed", "files_changed": []string{"x.txt"}, "base_commit": "0123456789abcdef0123456789abcdef01234567",
	})
	if err := os.WriteFile(filepath.Join(dir, "diff.patch"), []byte(patch), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runMain(t, "runs", "show", "patch-0102030405-cccccccc", "--diff", "--raw")
	if code != ExitOK || out != patch {
		t.Errorf("--diff --raw = %q (exit %d, %s), want diff.patch %q", out, code, errOut, patch)
	}
	out, _, _ = runMain(t, "runs", "show", "patch-0102030405-cccccccc", "--diff")
	assertInert(t, "--diff", []byte(out))
	if !strings.Contains(out, "+pwned␛]52;c;cHduZWQ=␇␛[2K␍\\u009b31m\\u202eevil␡␍\n") {
		t.Errorf("the neutralised diff does not show the line visibly:\n%s", out)
	}
}
