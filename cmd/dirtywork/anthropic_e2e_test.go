package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/engine"
	"github.com/dirtywork/dirtywork/engine/runs"
)

// anthropicKey is the key the tests give dirtywork for the Anthropic API;
// it must reach that API's base URL and nothing else.
const anthropicKey = "sk-ant-e2e-secret-4f1c9a"

// TestRunAnthropicEndToEnd drives a whole host-mode run with
// --provider anthropic against the scripted server's Messages API: it
// completes with the contract's stdout object, every request carries
// ANTHROPIC_API_KEY as x-api-key (and no bearer token), and the key is
// nowhere the worker can see or the run keeps: not in the sandbox's
// environment (the model asks bash for it), not in the run's records,
// not in the worktree.
func TestRunAnthropicEndToEnd(t *testing.T) {
	e := newE2E(t, `{"model": "claude-sonnet-4-5", "turns":[
		{"text": "Looking around.", "tool_calls":[
			{"name":"bash","arguments":{"command":"env; cat /proc/self/environ | tr '\\0' '\\n'"}},
			{"name":"write_file","arguments":{"path":"notes/new.txt","content":"hello\n"}}]},
		{"finish":"added notes"}]}`)
	root := strings.TrimSuffix(e.base, "/v1")
	args := []string{
		"run", "--sandbox", "none", "--provider", "anthropic", "--base-url", root, "--repo", e.repo,
		"--model", "claude-sonnet-4-5", "do the scripted task",
	}
	env := []string{
		"DIRTYWORK_HOME=" + e.home, "ANTHROPIC_API_KEY=" + anthropicKey,
		"DIRTYWORK_API_KEY=dw-openai-side-key", "XDG_CONFIG_HOME=" + t.TempDir(),
	}
	out, stderr, code, err := runCLIProcess(t, "", env, args...)
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var payload map[string]any
	if strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &payload) != nil {
		t.Fatalf("stdout is not one JSON object:\n%s", out)
	}
	if got := strings.Join(keysOf(payload), ","); got != strings.Join(normalKeys, ",") {
		t.Fatalf("stdout keys:\n%s\nwant\n%s", got, strings.Join(normalKeys, ","))
	}
	files, _ := json.Marshal(payload["files_changed"])
	if payload["status"] != "completed" || payload["provider"] != "anthropic" || payload["turns"] != float64(2) ||
		payload["final_message"] != "added notes" || payload["context_window_source"] != "provider:anthropic" ||
		string(files) != `["notes/new.txt"]` {
		t.Fatalf("payload %s", out)
	}
	if usage, _ := payload["usage"].(map[string]any); usage["prompt_tokens"].(float64) <= 0 || usage["completion_tokens"].(float64) <= 0 {
		t.Fatalf("usage %v", payload["usage"])
	}

	reqs := e.srv.Requests()
	if len(reqs) != 3 || reqs[0].Path != "/v1/models" || reqs[1].Path != "/v1/messages" || reqs[2].Path != "/v1/messages" {
		t.Fatalf("requests %+v", reqs)
	}
	for _, r := range reqs {
		if r.Header.Get("X-Api-Key") != anthropicKey || r.Header.Get("Anthropic-Version") != "2023-06-01" || r.Header.Get("Authorization") != "" {
			t.Fatalf("%s %s headers %v", r.Method, r.Path, r.Header)
		}
	}
	msgs := e.srv.MessagesRequests()
	if !msgs[0].Stream || len(msgs[1].Messages) != 3 {
		t.Fatalf("messages requests %+v", msgs)
	}
	// The second request carries the bash result: the sandbox's whole
	// environment, which must not hold the key.
	second := string(reqs[2].Body)
	if !strings.Contains(second, "HOME=") || !strings.Contains(second, "PATH=") {
		t.Fatalf("the bash result did not reach the model: %s", second)
	}
	for _, secret := range []string{anthropicKey, "ANTHROPIC_API_KEY", "dw-openai-side-key"} {
		if strings.Contains(second, secret) {
			t.Fatalf("the sandbox's environment shows %s:\n%s", secret, second)
		}
	}
	for _, dir := range []string{payload["run_dir"].(string), payload["worktree"].(string)} {
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if data, rerr := os.ReadFile(path); rerr == nil && bytes.Contains(data, []byte(anthropicKey)) {
				t.Errorf("%s holds the key", path)
			}
			return nil
		})
	}
	if strings.Contains(stderr, anthropicKey) {
		t.Errorf("stderr shows the key:\n%s", stderr)
	}
}

// TestOpenAIRunNeverSendsTheAnthropicKey: with ANTHROPIC_API_KEY set, an
// OpenAI-compatible server gets neither it nor an x-api-key header.
func TestOpenAIRunNeverSendsTheAnthropicKey(t *testing.T) {
	e := newE2E(t, `{"turns":[{"finish":"x"}]}`)
	env := []string{"DIRTYWORK_HOME=" + e.home, "ANTHROPIC_API_KEY=" + anthropicKey, "XDG_CONFIG_HOME=" + t.TempDir()}
	_, stderr, code, err := runCLIProcess(t, "", env, "run", "--sandbox", "none", "--repo", e.repo, "--base-url", e.base,
		"--model", "scripted/model", "--context-window", "32768", "task")
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s", code, err, stderr)
	}
	reqs := e.srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the server")
	}
	for _, r := range reqs {
		var all bytes.Buffer
		for k, v := range r.Header {
			all.WriteString(k + ": " + strings.Join(v, ",") + "\n")
		}
		if r.Header.Get("X-Api-Key") != "" || strings.Contains(all.String(), anthropicKey) || bytes.Contains(r.Body, []byte(anthropicKey)) {
			t.Fatalf("%s %s carried the Anthropic key:\n%s", r.Method, r.Path, all.String())
		}
	}
}

// TestResumeCarriesTheAnthropicServer: resuming a run of the Anthropic
// API, without --provider, goes back to that API with its key (the flags'
// defaults were the OpenAI side's), and to its default base URL when none
// is given.
func TestResumeCarriesTheAnthropicServer(t *testing.T) {
	e := newE2E(t, `{"model": "claude-sonnet-4-5", "turns":[
		{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"a\n"}}]},
		{"finish":"done"}]}`)
	root := strings.TrimSuffix(e.base, "/v1")
	env := []string{
		"DIRTYWORK_HOME=" + e.home, "ANTHROPIC_API_KEY=" + anthropicKey,
		"DIRTYWORK_API_KEY=dw-openai-side-key", "XDG_CONFIG_HOME=" + t.TempDir(),
	}
	out, stderr, code, err := runCLIProcess(t, "", env, "run", "--sandbox", "none", "--provider", "anthropic",
		"--base-url", root, "--repo", e.repo, "--model", "claude-sonnet-4-5", "--max-turns", "1", "task")
	if err != nil || code != 1 || !strings.Contains(out, `"status":"max_turns"`) {
		t.Fatalf("first run: exit %d %v\n%s\n%s", code, err, out, stderr)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(out), &first); err != nil {
		t.Fatal(err)
	}
	slug := filepath.Base(first["run_dir"].(string))
	seen := len(e.srv.Requests())
	out, stderr, code, err = runCLIProcess(t, "", env, "resume", slug, "--base-url", root)
	if err != nil || code != 0 || !strings.Contains(out, `"provider":"anthropic"`) {
		t.Fatalf("resume: exit %d %v\n%s\n%s", code, err, out, stderr)
	}
	reqs := e.srv.Requests()[seen:]
	if len(reqs) == 0 {
		t.Fatal("the resume sent nothing to the Anthropic side")
	}
	for _, r := range reqs {
		if r.Header.Get("X-Api-Key") != anthropicKey || r.Header.Get("Authorization") != "" {
			t.Fatalf("%s %s headers %v", r.Method, r.Path, r.Header)
		}
	}

	// Without --base-url, the carried provider's default.
	spec := carryProvider(engineResumeRequest(t, first["run_dir"].(string)), false)
	if spec.Provider != "anthropic" || spec.BaseURL != defaultAnthropicURL || spec.APIKey == "dw-openai-side-key" {
		t.Fatalf("carried spec %+v", spec)
	}
}

// engineResumeRequest is a resume of the run in dir as the command builds
// it before the run's record is read: the OpenAI side's defaults.
func engineResumeRequest(t *testing.T, dir string) engine.ResumeRequest {
	t.Helper()
	run, err := runs.Open(t.TempDir()).Find(dir)
	if err != nil {
		t.Fatal(err)
	}
	return engine.ResumeRequest{Run: run, Spec: engine.Spec{Provider: "openai", BaseURL: defaultOpenAIBaseURL, APIKey: "dw-openai-side-key"}}
}
