//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
	"github.com/dirtywork/dirtywork/transcript"
)

// doctorJSON runs doctor --json and returns its report by check name and
// the exit code.
func doctorJSON(t *testing.T, env []string, args ...string) (map[string]check, doctorReport, int) {
	t.Helper()
	out, errOut, code, err := runCLIProcess(t, "", env, append([]string{"doctor", "--json"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json printed %q (%v)\n%s", out, err, errOut)
	}
	byName := map[string]check{}
	for _, c := range rep.Checks {
		byName[c.Name] = c
	}
	return byName, rep, code
}

func TestDoctor(t *testing.T) {
	e := newE2E(t, `{"turns":[{"finish":"x"}]}`)
	if _, _, code := e.run("a run that ends"); code != 0 {
		t.Fatal("setup run failed")
	}
	// A crashed run: its record says running, nobody holds its lock, and
	// its worktree is still there.
	crashed := "crashed-0101000000-00000001"
	e.oldRun(crashed, false)
	if _, err := transcript.MergeRecord(filepath.Join(e.home, "runs", crashed), transcript.Record{"status": "running"}); err != nil {
		t.Fatal(err)
	}
	env := []string{"DIRTYWORK_HOME=" + e.home, "XDG_CONFIG_HOME=" + t.TempDir()}
	checks, rep, code := doctorJSON(t, env, "--base-url", e.base, "--model", scripted.DefaultModel)
	for _, name := range []string{"git", "docker", "image", "host sandbox", "model server", "runs", "orphans"} {
		if _, ok := checks[name]; !ok {
			t.Errorf("no %q check in %v", name, rep.Checks)
		}
	}
	// The tests' DOCKER_HOST is a socket nobody listens on.
	if c := checks["docker"]; c.Status != checkFail || !strings.Contains(c.Fix, "--sandbox none") || c.Problem == "" {
		t.Errorf("docker: %+v", c)
	}
	if c := checks["image"]; c.Status != checkSkipped {
		t.Errorf("image: %+v", c)
	}
	if code != ExitDoctorProblem || rep.OK {
		t.Errorf("exit %d, ok %v with a failed check", code, rep.OK)
	}
	if c := checks["git"]; c.Status != checkOK || !strings.HasPrefix(c.Detail, "git version ") {
		t.Errorf("git: %+v", c)
	}
	if c := checks["model server"]; c.Status != checkOK || !strings.Contains(c.Detail, scripted.DefaultModel) {
		t.Errorf("model server: %+v", c)
	}
	if c := checks["host sandbox"]; c.Status != checkOK {
		t.Errorf("host sandbox on this kernel: %+v", c)
	}
	if c := checks["runs"]; c.Status != checkOK || !strings.Contains(c.Detail, "2 run(s), 0 alive") {
		t.Errorf("runs: %+v", c)
	}
	o := checks["orphans"]
	if o.Status != checkWarn || !strings.Contains(o.Detail, "crashed-run "+crashed) || !strings.Contains(o.Fix, "dirtywork runs reconcile") {
		t.Errorf("orphans: %+v", o)
	}
	if data, _ := json.Marshal(o.Data); !strings.Contains(string(data), `"kind":"crashed-run"`) || !strings.Contains(string(data), `"name":"`+crashed+`"`) {
		t.Errorf("orphans data %s", data)
	}
	// A dry run: the crashed run is still there, as it was.
	if _, err := os.Stat(filepath.Join(e.repo, ".worktrees", "dw-"+crashed)); err != nil {
		t.Errorf("doctor changed something: %v", err)
	}

	// A model that is not loaded, and a server that is not there.
	checks, _, _ = doctorJSON(t, env, "--base-url", e.base, "--model", "other/model")
	if c := checks["model server"]; c.Status != checkFail || !strings.Contains(c.Problem, "model 'other/model' is not loaded") ||
		!strings.Contains(c.Fix, "lms load other/model") {
		t.Errorf("missing model: %+v", c)
	}
	checks, _, _ = doctorJSON(t, append(env, "OPENAI_API_KEY=sk"), "--base-url", "http://127.0.0.1:1/v1")
	if c := checks["model server"]; c.Status != checkFail || !strings.Contains(c.Fix, "--base-url") || !strings.Contains(c.Fix, "never OPENAI_API_KEY") {
		t.Errorf("no server: %+v", c)
	}
	// An unusable runs root.
	home := t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(home, "runs")); err != nil {
		t.Fatal(err)
	}
	checks, _, _ = doctorJSON(t, []string{"DIRTYWORK_HOME=" + home}, "--base-url", e.base)
	if c := checks["runs"]; c.Status != checkFail || !strings.Contains(c.Problem, "is not a real directory") || c.Fix == "" {
		t.Errorf("symlinked runs root: %+v", c)
	}
	if _, errOut, code := runMain(t, "doctor", "extra"); code != ExitUsage || !strings.HasPrefix(errOut, "error: ") {
		t.Errorf("doctor with an argument: exit %d %q", code, errOut)
	}
}

// TestDoctorTextIsSafeOnATerminal: a model server's model names reach
// the terminal, or any other output, with their escape sequences shown,
// not obeyed.
func TestDoctorTextIsSafeOnATerminal(t *testing.T) {
	t.Parallel()
	master, slave := openPTY(t)
	rep := doctorReport{OK: true, Checks: []check{{
		Name: "model server", Status: checkOK, Detail: "http://h/v1: 1 model(s): evil\x1b]0;pwned\x07\x1b[31mred\u009b2J",
	}}}
	if err := printDoctor(slave, rep); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := master.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	got := string(buf[:n])
	for _, bad := range []string{"\x1b", "\x07", "\u009b"} {
		if strings.Contains(got, bad) {
			t.Fatalf("the terminal got %q raw:\n%q", bad, got)
		}
	}
	if !strings.Contains(got, "evil") || !strings.Contains(got, "red") {
		t.Fatalf("the text itself is gone: %q", got)
	}
	// Output that is no terminal (a pipe, a file) is neutralised the same
	// (the terminal's line discipline added the CRs).
	var plain strings.Builder
	if err := printDoctor(&plain, rep); err != nil || plain.String() != strings.ReplaceAll(got, "\r\n", "\n") {
		t.Fatalf("output that is no terminal = %q (%v), want what the terminal got: %q", plain.String(), err, got)
	}
}

func TestDoctorKeysAreDocumented(t *testing.T) {
	t.Parallel()
	rep := runDoctor(t.Context(), doctorInputs{baseURL: "http://127.0.0.1:1/v1", model: "m", image: "i"})
	doc := documentedKeys(t)
	for _, c := range rep.Checks {
		data, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(data, &obj); err != nil {
			t.Fatal(err)
		}
		if m := undocumented(doc, "Doctor", obj); len(m) > 0 {
			t.Errorf("doctor check keys not in the contract: %v", m)
		}
	}
}
