package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

// TestE2ELaunchFormLaunchesWhatItShows: at 80×24, tab only moves (a
// picked model is not rewritten), ctrl+f completes the model, a model the
// server does not list is refused in readable lines, and the next form
// for the repository brings back its model and verify command.
func TestE2ELaunchFormLaunchesWhatItShows(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	done := "done"
	srv := scripted.NewMulti(
		scripted.Script{Model: "fake/coder-next", Turns: []scripted.Turn{{Finish: &done}}},
		scripted.Script{Model: "fake/coder-aoder", Turns: []scripted.Turn{{Finish: &done}}},
	)
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	repo := filepath.Join(tmp, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}

	p := startTUI(t, 80, 24, []string{"DIRTYWORK_HOME=" + home, "TMPDIR=" + tmp},
		"tui", "--base-url", base, "--model", "fake/coder-next", "--repo", repo, "--sandbox", "none", "--notify", "none")
	p.waitText("mission control", 30*time.Second)
	p.keys("L")
	p.waitText("2 served", 30*time.Second) // the server's list arrived
	p.typeText("fix it")
	p.keys("Tab", "C-n", "Tab") // model: the next one, then on to the sandbox
	screen, _ := p.waitFor("the sandbox field focused", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "▸ sandbox")
	})
	if !strings.Contains(screen, "fake/coder-aoder") || strings.Contains(screen, "aoder-next") || strings.Contains(screen, "coder-aoder-") {
		t.Fatalf("tab changed the picked model:\n%s", screen)
	}

	// A model the server does not list is refused, readably.
	p.keys("BTab", "C-u")
	p.typeText("fake/nope")
	p.keys("C-s")
	screen, _ = p.waitFor("the refusal", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "not a model the server lists")
	})
	flat := strings.Join(strings.Fields(screen), " ")
	if !strings.Contains(flat, "fake/coder-next") || !strings.Contains(flat, "fake/coder-aoder") || !strings.Contains(screen, "Launch a run") {
		t.Fatalf("the refusal does not say what is served, or the form closed:\n%s", screen)
	}

	// ctrl+f completes the model from the list.
	p.keys("C-u")
	p.typeText("fake/coder-a")
	p.keys("C-f")
	p.waitText("fake/coder-aoder", 30*time.Second)
	p.keys("Tab", "Tab", "Tab") // sandbox, max turns, verify
	p.waitText("▸ verify", 30*time.Second)
	p.typeText("true")
	p.keys("C-s")
	p.waitFor("the form closed and the run launched", 60*time.Second, func(s string) bool {
		return !strings.Contains(s, "Launch a run") && strings.Contains(s, "fix it")
	})

	// The next form for the repository brings its model and verify back.
	p.keys("L")
	screen, _ = p.waitFor("the remembered launch", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "Launch a run") && strings.Contains(s, "fake/coder-aoder") && strings.Contains(s, "verify     true")
	})
	if _, err := os.Stat(filepath.Join(home, "launch.json")); err != nil {
		t.Fatalf("no memory file: %v\n%s", err, screen)
	}
	p.keys("Escape")
}
