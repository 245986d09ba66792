package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/egress"
	"github.com/dirtywork/dirtywork/sandbox/egress/egresstest"
)

// TestRunAllowNetworkThroughTheProxy runs a host-mode run with
// --allow-network whose worker fetches from a registry on the allowlist
// (a network namespace of the test's own) and tries cloud metadata and the
// host's loopback: the run records the proxy in run_start, every decision
// in egress.log and the counts in run_end and run.json; the allowlist
// holds the lockfile's registry and the --allow-host entries.
func TestRunAllowNetworkThroughTheProxy(t *testing.T) {
	reg := egresstest.NewRegistry(t)
	loop := egresstest.ListenHost(t, "127.0.0.1:0", "host loopback service")
	regHost := fmt.Sprintf("%s:%d", reg.Addr, reg.Port)
	cmd := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	e := newE2E(t, `{"turns":[
		{"tool_calls":[{"name":"bash","arguments":{"command":`+cmd("curl -sS --max-time 10 "+reg.URL+"/pkg")+`}}]},
		{"tool_calls":[{"name":"bash","arguments":{"command":`+cmd("curl -sS --max-time 10 http://169.254.169.254/latest/meta-data/")+`}}]},
		{"tool_calls":[{"name":"bash","arguments":{"command":`+cmd(fmt.Sprintf("curl -sS --max-time 10 --noproxy '' http://127.0.0.1:%d/", loop))+`}}]},
		{"finish":"fetched"}]}`)
	if err := os.WriteFile(filepath.Join(e.repo, "package-lock.json"), []byte(`{"packages": {"node_modules/a": {"resolved": "https://registry.npmjs.org/a/-/a-1.0.0.tgz"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, e.repo, "add", "package-lock.json")
	git(t, e.repo, "commit", "-q", "-m", "lockfile")

	payload, stderr, code := e.run("--allow-network", "--allow-host", regHost+",169.254.169.254", "--allow-host", fmt.Sprintf("127.0.0.1:%d", loop))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	evs := events(t, payload["transcript"].(string))
	start, end := evs[0], evs[len(evs)-1]
	sb := start["sandbox"].(map[string]any)
	eg, _ := sb["egress"].(map[string]any)
	var allow []string
	for _, a := range eg["allowlist"].([]any) {
		allow = append(allow, a.(string))
	}
	if sb["network"] != "proxy" || !slices.Equal(allow, []string{regHost, "169.254.169.254", fmt.Sprintf("127.0.0.1:%d", loop), "registry.npmjs.org"}) {
		t.Fatalf("run_start.sandbox: network %v, egress %v", sb["network"], eg)
	}
	results := 0
	for _, ev := range evs {
		if ev["event"] != "tool_result" || ev["tool"] != "bash" {
			continue
		}
		out := fmt.Sprint(ev["result"])
		switch results {
		case 0:
			if !strings.Contains(out, reg.Body) {
				t.Errorf("the registry through the proxy: %s", out)
			}
		default:
			if !strings.Contains(out, "403") && !strings.Contains(out, "refused") {
				t.Errorf("request %d was not refused: %s", results, out)
			}
		}
		results++
	}
	for name, rec := range map[string]map[string]any{"run_end": end, "run.json": readRunJSON(t, payload["run_dir"].(string))} {
		got, _ := rec["egress"].(map[string]any)
		if got == nil || got["allowed"] != 1.0 || got["refused"] != 2.0 || got["log"] != filepath.Join(payload["run_dir"].(string), egress.LogName) {
			t.Errorf("%s.egress = %v", name, got)
		}
	}
	data, err := os.ReadFile(filepath.Join(payload["run_dir"].(string), egress.LogName))
	if err != nil || strings.Count(string(data), "\n") != 3 || !strings.Contains(string(data), `169.254.169.254: link-local`) {
		t.Fatalf("egress.log: %v\n%s", err, data)
	}
}

// readRunJSON reads a run's run.json.
func readRunJSON(t *testing.T, runDir string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(runDir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}
