package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestDemoRunsTheScriptedTaskToCompletion(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	out, errOut, code, err := runCLIProcess(t, "", []string{"TMPDIR=" + tmp}, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("demo exited %d\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "the model is scripted") {
		t.Fatalf("the demo must say its model is scripted:\n%s", errOut)
	}
	var payload map[string]any
	if err := json.Unmarshal([]byte(out), &payload); err != nil {
		t.Fatalf("stdout is not the run's JSON: %v\n%s", err, out)
	}
	verify, _ := payload["verify"].(map[string]any)
	if payload["status"] != "completed" || verify == nil || verify["passed"] != true {
		t.Fatalf("payload %v", payload)
	}
	files, _ := json.Marshal(payload["files_changed"])
	if string(files) != `["invoice.py","test_invoice.py"]` {
		t.Fatalf("files_changed %s", files)
	}
	wt := payload["worktree"].(string)
	if !strings.HasPrefix(wt, tmp) {
		t.Fatalf("the demo worked outside its temp dir: %s", wt)
	}
	diff, err := exec.Command("git", "-C", wt, "diff").CombinedOutput()
	if err != nil || !strings.Contains(string(diff), "+    return round(net + net * tax_rate, 2)") {
		t.Fatalf("diff:\n%s %v", diff, err)
	}
	if _, err := os.Stat(filepath.Join(payload["run_dir"].(string), "transcript.jsonl")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "git -C "+wt+" diff") {
		t.Fatalf("the demo must say where to look:\n%s", errOut)
	}
}
