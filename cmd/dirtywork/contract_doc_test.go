package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// documentedKeys parses docs/machine-contract.md: for every "##" and
// "###" heading, the backticked first cells of its tables.
func documentedKeys(t *testing.T) map[string]map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "machine-contract.md"))
	if err != nil {
		t.Fatal(err)
	}
	cell := regexp.MustCompile("^\\|\\s*`([^`]+)`")
	out := map[string]map[string]bool{}
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "### "):
			section = strings.TrimSpace(strings.TrimPrefix(line, "### "))
		case strings.HasPrefix(line, "## "):
			section = strings.TrimSpace(strings.TrimPrefix(line, "## "))
		}
		if m := cell.FindStringSubmatch(line); m != nil {
			if out[section] == nil {
				out[section] = map[string]bool{}
			}
			out[section][m[1]] = true
		}
	}
	return out
}

// undocumented returns the keys of obj the section does not describe.
func undocumented(doc map[string]map[string]bool, section string, obj map[string]any, always ...string) []string {
	var missing []string
	for k := range obj {
		if doc[section][k] {
			continue
		}
		if contains(always, k) {
			continue
		}
		missing = append(missing, k)
	}
	sort.Strings(missing)
	return missing
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestEmittedKeysAreDocumented runs dirtywork through runs that emit every
// event and path and fails on any key of stdout, run.json or the
// transcript that docs/machine-contract.md does not describe.
func TestEmittedKeysAreDocumented(t *testing.T) {
	doc := documentedKeys(t)
	for _, section := range []string{"Standard output", "run.json", "run_start", "run_end", "tool_result"} {
		if len(doc[section]) == 0 {
			t.Fatalf("the contract document has no key table under %q", section)
		}
	}
	e := newE2E(t, `{"turns":[
		{"text":"looking","tool_calls":[{"name":"read_file","arguments":{"path":"README.md"}}]},
		{"tool_calls":[{"name":"bash","arguments":{"command":"git push origin main"}}]},
		{"text":""},
		{"tool_calls":[{"name":"bash","arguments":{"command":"sleep 5","timeout":1}}]},
		{"tool_calls":[{"name":"write_file","arguments":{"path":"a.txt","content":"a\n"}}]},
		{"finish":"done"},
		{"tool_calls":[{"name":"write_file","arguments":{"path":"b.txt","content":"b\n"}}]},
		{"finish":"done again"}]}`)
	// The first round fails (no b.txt yet), the worker writes it, the
	// second passes: what verify itself makes never stays in the tree.
	payload, stderr, code := e.run("--verify", "test -f b.txt", "--verify-rounds", "1", "--allow-network")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if m := undocumented(doc, "Standard output", payload); len(m) > 0 {
		t.Errorf("stdout keys not in the contract: %v", m)
	}
	var rec map[string]any
	data, err := os.ReadFile(filepath.Join(payload["run_dir"].(string), "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if m := undocumented(doc, "run.json", rec); len(m) > 0 {
		t.Errorf("run.json keys not in the contract: %v", m)
	}
	seen := map[string]bool{}
	for _, ev := range events(t, payload["transcript"].(string)) {
		name := ev["event"].(string)
		seen[name] = true
		if m := undocumented(doc, name, ev, "ts", "event"); len(m) > 0 {
			t.Errorf("%s keys not in the contract: %v", name, m)
		}
	}
	for _, want := range []string{"run_start", "model_request", "assistant", "tool_result", "guardrail_block", "nudge", "verify", "run_end"} {
		if !seen[want] {
			t.Errorf("the run emitted no %s event; the test must cover it", want)
		}
	}
}
