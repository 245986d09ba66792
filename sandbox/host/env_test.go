package host

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/host/jail"
)

func TestBashEnvIsExactlyE38(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{".cargo", ".pyenv"} {
		if err := os.Mkdir(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := envMap([]string{
		"PATH=/usr/bin", "TERM=xterm", "LANG=C.UTF-8", "TMPDIR=/operator/tmp", "HOME=" + home,
		"OPENAI_API_KEY=sk-x", "ANTHROPIC_API_KEY=k", "PYTHONPATH=/operator/py", "GIT_DIR=/x",
		"RUSTUP_HOME=/opt/rustup", "NVM_DIR=",
	})
	got := bashEnv(env, home, "/wt", "/scratch", "/site")
	want := []string{
		"PATH=/usr/bin", "TERM=xterm", "LANG=C.UTF-8", "TMPDIR=/scratch", "HOME=/wt", "PYTHONPATH=/site",
		"RUSTUP_HOME=/opt/rustup", // the operator's value wins
		"CARGO_HOME=" + filepath.Join(home, ".cargo"),
		"PYENV_ROOT=" + filepath.Join(home, ".pyenv"),
		// VOLTA_HOME: unset and no ~/.volta; NVM_DIR: empty and no ~/.nvm.
	}
	if !slices.Equal(got, want) {
		t.Errorf("bash env\n got %q\nwant %q", got, want)
	}
	if got := bashEnv(map[string]string{}, "", "/wt", "/s", ""); !slices.Equal(got, []string{"TMPDIR=/s", "HOME=/wt"}) {
		t.Errorf("empty operator env: %q", got)
	}
}

func TestPythonUserSite(t *testing.T) {
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// A stand-in python3 that reports a user site, and counts its runs.
	counter := filepath.Join(dir, "runs")
	writeFile(t, filepath.Join(bin, "python3"), "#!/bin/sh\necho run >> "+counter+"\necho "+site+"\n")
	if err := os.Chmod(filepath.Join(bin, "python3"), 0o755); err != nil {
		t.Fatal(err)
	}
	envList := []string{"PATH=" + bin}
	env := envMap(envList)
	if got := pythonUserSite(t.Context(), env, envList, dir, ""); got != "" {
		t.Errorf("missing site dir: got %q", got)
	}
	if err := os.Mkdir(site, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := pythonUserSite(t.Context(), env, envList, dir, ""); got != site {
		t.Errorf("got %q, want %q", got, site)
	}
	if runs := readFile(t, counter); runs != "run\n" {
		t.Errorf("python ran %q: the answer is not cached per interpreter", runs)
	}
	env["PYTHONNOUSERSITE"] = "1"
	if got := pythonUserSite(t.Context(), env, envList, dir, ""); got != "" {
		t.Errorf("PYTHONNOUSERSITE set: got %q", got)
	}
}

// TestPythonUserSiteCacheFile: an answer is kept across processes in the
// cache file, and asked again once the interpreter changed.
func TestPythonUserSiteCacheFile(t *testing.T) {
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{site, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	counter := filepath.Join(dir, "runs")
	py := filepath.Join(bin, "python3")
	writeFile(t, py, "#!/bin/sh\necho run >> "+counter+"\necho "+site+"\n")
	if err := os.Chmod(py, 0o755); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache", "user-site.json")
	envList := []string{"PATH=" + bin, "HOME=" + dir}
	forget := func() {
		userSitesMu.Lock()
		delete(userSites, py) // as a new process would start
		userSitesMu.Unlock()
	}
	for range 2 {
		forget()
		if got := pythonUserSite(t.Context(), envMap(envList), envList, dir, cache); got != site {
			t.Fatalf("got %q, want %q", got, site)
		}
	}
	if runs := readFile(t, counter); runs != "run\n" {
		t.Errorf("python ran %q: the answer was not kept in the file", runs)
	}
	// Another interpreter at the same path: asked again.
	writeFile(t, py, "#!/bin/sh\necho run >> "+counter+"\necho "+site+"\n# changed\n")
	forget()
	if got := pythonUserSite(t.Context(), envMap(envList), envList, dir, cache); got != site {
		t.Fatalf("got %q", got)
	}
	if runs := readFile(t, counter); runs != "run\nrun\n" {
		t.Errorf("python ran %q after it changed", runs)
	}
}

// TestProbeJailIsKept: a whole jail's probe is reused from the file while
// its key holds, and probed afresh once the key changes.
func TestProbeJailIsKept(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cache", "probe.json")
	first := ProbeJail(t.Context(), file)
	if first.Err() != nil {
		t.Skipf("no whole jail here to keep: %v", first.Err())
	}
	// A report of the same key, marked: if it comes back, it came from
	// the file.
	marked := first
	marked.Layers = append(append([]jail.LayerStatus(nil), first.Layers...), jail.LayerStatus{Name: "kept", OK: true})
	data, err := json.Marshal(probeCache{Key: probeKey(nil), Report: marked})
	if err != nil {
		t.Fatal(err)
	}
	writeAtomic(file, data)
	if _, ok := ProbeJail(t.Context(), file).Layer("kept"); !ok {
		t.Error("the kept report was not used")
	}
	data, _ = json.Marshal(probeCache{Key: "another boot", Report: marked})
	writeAtomic(file, data)
	if _, ok := ProbeJail(t.Context(), file).Layer("kept"); ok {
		t.Error("a report of another key was used")
	}
}
