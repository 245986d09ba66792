package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/tui"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/launcher"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTUIConfigSection(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `max-turns = 60

[tui]
notifications = ["bell", "osc9"]
max_parallel = 2
theme = "light"

[tui.keys]
"review.accept" = "y"
"common.quit" = ["Q", "ctrl+c"]
`)
	cfg, err := loadTUIConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxParallel != 2 || cfg.Theme != "light" {
		t.Fatalf("cfg = %+v", cfg)
	}
	n, err := parseNotify(cfg.Notifications)
	if err != nil || n != (tui.Notify{Bell: true, OSC9: true}) {
		t.Fatalf("notify = %+v, %v", n, err)
	}
	over, err := cfg.keyOverrides()
	if err != nil || over["review.accept"][0] != "y" || len(over["common.quit"]) != 2 {
		t.Fatalf("keys = %v, %v", over, err)
	}
}

func TestTUIConfigErrors(t *testing.T) {
	t.Parallel()
	for name, text := range map[string]string{
		"unknown setting": "[tui]\nmax_runs = 2\n",
		"bad syntax":      "[tui\n",
		"bad type":        "[tui]\nmax_parallel = \"four\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := loadTUIConfig(writeConfig(t, text)); err == nil {
				t.Fatal("accepted")
			} else if !strings.Contains(err.Error(), "config.toml") {
				t.Fatalf("error does not name the file: %v", err)
			}
		})
	}
	if _, err := parseNotify("loud"); err == nil {
		t.Fatal("unknown notification accepted")
	}
	if n, err := parseNotify("none"); err != nil || n != (tui.Notify{}) {
		t.Fatalf("none = %+v %v", n, err)
	}
	if n, _ := parseNotify(nil); !n.Bell {
		t.Fatal("the default is not the bell")
	}
}

func TestTUIConfigDoesNotBreakRunDefaults(t *testing.T) {
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, "dirtywork")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte("max-turns = 0\n[tui]\nmax_parallel = 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// max-turns = 0 is refused for run: proof the file was read, and that
	// the [tui] table itself is not an unknown run setting.
	_, errOut, code := runCLI(t, "", []string{"XDG_CONFIG_HOME=" + dir}, "run", "--repo", dir, "task")
	if code != 2 || strings.Contains(errOut, "unknown setting 'tui'") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestTUINeedsATerminal(t *testing.T) {
	home := t.TempDir()
	_, errOut, code := runCLI(t, "", []string{"DIRTYWORK_HOME=" + home}, "tui")
	if code != 2 || !strings.Contains(errOut, "needs a terminal") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestTUIRefusesBadKeyBindings(t *testing.T) {
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, "dirtywork")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte("[tui.keys]\n\"review.accept\" = \"r\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "", []string{"XDG_CONFIG_HOME=" + dir, "DIRTYWORK_HOME=" + t.TempDir()}, "tui")
	if code != 2 || !strings.Contains(errOut, "review.reject") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestLauncherRefusalCarriesMessageAndHint(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	l := &launcher.Launcher{Exe: os.Args[0], Env: append(os.Environ(), testMainEnv+"=1", "DIRTYWORK_HOME="+home)}
	_, err := l.Launch(t.Context(), backend.LaunchSpec{Repo: t.TempDir(), Task: "t", Sandbox: "none", MaxTurns: 3, BaseURL: "http://127.0.0.1:9/v1"})
	var refused *backend.RefusedError
	if !errors.As(err, &refused) || refused.Msg == "" {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(home, "runs")); len(entries) != 0 {
		t.Fatalf("a refused launch created %d runs", len(entries))
	}
}

// --bench refuses, exit 2, a results file it cannot read and a bench root
// without one; a readable file gets as far as the terminal check.
func TestTUIBenchRefusals(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	benchDir := filepath.Join(home, "bench")
	if err := os.MkdirAll(benchDir, 0o700); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(t.TempDir(), "r.jsonl")
	if err := bench.AppendRow(results, bench.Row{Stamp: "s", Model: "m", Task: "t", Status: "completed", Acceptance: "pass"}); err != nil {
		t.Fatal(err)
	}
	env := []string{"DIRTYWORK_HOME=" + home}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{"--bench", filepath.Join(home, "nope.jsonl")}, "cannot read results file"},
		{"missing file, = form", []string{"--bench=" + filepath.Join(home, "nope.jsonl")}, "cannot read results file"},
		{"a directory", []string{"--bench", benchDir}, "is not a results file"},
		{"no results yet", []string{"--bench"}, "no results file in " + benchDir},
		{"two files", []string{"--bench=" + results, results}, "one results file"},
		{"an argument without --bench", []string{results}, "unexpected argument"},
		{"a readable file", []string{"--bench", results}, "needs a terminal"},
		{"the newest", []string{"--bench"}, "needs a terminal"},
	} {
		if c.name == "the newest" {
			if err := os.Rename(results, filepath.Join(benchDir, "20261202T130000Z.jsonl")); err != nil {
				t.Fatal(err)
			}
		}
		_, errOut, code, err := runCLIProcess(t, "", env, append([]string{"tui"}, c.args...)...)
		if err != nil || code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d (%v): %s", c.name, code, err, errOut)
		}
	}
}
