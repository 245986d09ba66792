//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

// onTerminal runs the CLI as the run's user with stdout and stderr on a
// pseudo-terminal and returns what reached it and the exit code.
func (e *escapeRun) onTerminal(args ...string) ([]byte, int) {
	e.t.Helper()
	pt, tty := openPTY(e.t)
	read := make(chan []byte)
	go func() {
		var buf bytes.Buffer
		_, _ = io.Copy(&buf, pt) // ends with EIO once the terminal side closes
		read <- buf.Bytes()
	}()
	cmd := e.command(e.repo, e.bin, args...)
	cmd.Env = append(cmd.Env, testMainEnv+"=1")
	cmd.Stdout, cmd.Stderr = tty, tty
	err := cmd.Run()
	_ = tty.Close()
	out := <-read
	code := 0
	if err != nil {
		code = cmd.ProcessState.ExitCode()
	}
	return out, code
}

// Worker-chosen file names and .gitattributes text carry escape sequences;
// every host verb that shows them on the operator's terminal must
// neutralise them: lane list (git status of the lane), runs accept's
// warnings, errors that quote worker paths.
func TestWorkerNamesNeverReachTheTerminalRaw(t *testing.T) {
	t.Parallel()
	e := newEscapeRun(t, nil)
	// python writes the names: the escapes are bytes the shell would not
	// pass through a here-string unchanged.
	payload := e.run([]string{
		`python3 -c "
open('evil\x1b]0;owned\x07\x1b[2J\u009b31m.txt','w').write('x\n')
open('.gitattributes','w').write('* filter=x\x1b]0;owned\x07 diff=y\x1b[2J\n')
open('run.sh','w').write('#!/bin/sh\n'); import os; os.chmod('run.sh',0o755)
"; ls`,
	})
	if payload["status"] != "completed" {
		t.Fatalf("payload %v", payload)
	}
	slug := filepath.Base(payload["run_dir"].(string))
	check := func(what string, out []byte) {
		t.Helper()
		for _, bad := range []string{"\x1b", "\x07", "\u009b"} {
			if i := bytes.Index(out, []byte(bad)); i >= 0 {
				t.Errorf("%s: %q reached the terminal: %q", what, bad, out[max(0, i-300):min(len(out), i+100)])
			}
		}
	}
	for _, args := range [][]string{
		{"lane", "list", "--repo", e.repo},
		{"runs", "list"},
		{"runs", "show", slug},
		{"runs", "show", slug, "--diff"},
		{"runs", "merge", slug, "--dry-run"},
		{"runs", "accept", slug},
		{"runs", "show", slug, "--markdown"},
	} {
		out, code := e.onTerminal(args...)
		t.Logf("%s: exit %d", strings.Join(args, " "), code)
		check(strings.Join(args, " "), out)
	}
	_ = os.Remove
}

// The worker's repositories are moved into the run's quarantine whole,
// config and all. The reviewer who looks there (or a shell prompt with git
// integration on the way in) runs git in them: nothing of the worker's may
// run then.
func TestQuarantinedRepositoriesRunNothing(t *testing.T) {
	t.Parallel()
	for _, cred := range escapeUsers(t) {
		t.Run(userName(cred), func(t *testing.T) {
			e := newEscapeRun(t, cred)
			touch := "touch " + e.marker
			payload := e.run([]string{
				"git init -q evil && git -C evil config core.fsmonitor '" + touch + "' && " +
					"git init -q --bare sub && git -C sub config core.bare false && git -C sub config core.worktree .. && " +
					"git -C sub config core.fsmonitor '" + touch + "' && mkdir -p docs && echo 'gitdir: ../sub' > docs/.git; echo planted",
			})
			if payload["status"] != "completed" {
				t.Fatalf("payload %v", payload)
			}
			q := filepath.Join(payload["run_dir"].(string), "quarantine")
			for _, dir := range []string{"evil", "evil/.git", "sub", "docs"} {
				_ = e.command(filepath.Join(q, dir), "git", "status").Run()
				e.noMarker("git status in quarantine/" + dir)
			}
			if _, err := os.Stat(filepath.Join(q, "evil", ".git", "config")); err != nil {
				t.Errorf("the quarantined repository's files are gone: %v", err)
			}
		})
	}
}

// The worker's private git dir lies on the host's disk beside the tree:
// a fill there (bytes or entries) is stopped like one in the tree, during
// the command that makes it and between commands, as the run's user.
func TestRunGitDirFillIsStopped(t *testing.T) {
	t.Parallel()
	gd := "gd=$(git rev-parse --absolute-git-dir); "
	for _, cred := range escapeUsers(t) {
		t.Run(userName(cred), func(t *testing.T) {
			for _, tc := range []struct {
				name     string
				commands []string
				args     []string
				want     string
			}{
				{
					"one command",
					[]string{gd + `for i in $(seq 200); do head -c 1048576 /dev/zero > $gd/fill$i; sleep 0.02; done; echo done > finished`},
					[]string{"--gitdir-size", "50m"},
					"git dir exceeds 50 MB",
				},
				{
					"in steps",
					[]string{gd + `head -c 40M /dev/zero > $gd/a`, gd + `head -c 40M /dev/zero > $gd/b`, "echo done > finished"},
					[]string{"--gitdir-size", "50m"},
					"git dir exceeds 50 MB",
				},
				{
					"entries",
					[]string{gd + `mkdir $gd/many && cd $gd/many && seq 3000 | xargs touch`, "echo done > finished"},
					[]string{"--max-worktree-files", "100"},
					"git dir exceeds 1224 entries",
				},
			} {
				t.Run(tc.name, func(t *testing.T) {
					e := newEscapeRun(t, cred)
					payload := e.run(tc.commands, tc.args...)
					if payload["status"] != "budget_exceeded" || !strings.Contains(payload["final_message"].(string), tc.want) {
						t.Fatalf("payload %v", payload)
					}
					if _, err := os.Stat(filepath.Join(payload["worktree"].(string), "finished")); err == nil {
						t.Error("the run went on past the fill")
					}
				})
			}
		})
	}
}

// Sparse files cost the worker nothing: one command makes hundreds of
// 49 MB ones (the jail's file size limit) before the budget stops it.
// Finalize reads no more of them than the budget allows (it read all,
// 70 GB of zeros in 105 s, before): the rest are counted by size.
func TestRunSparseFillIsNotReadWhole(t *testing.T) {
	t.Parallel()
	e := newEscapeRun(t, nil)
	payload := e.run([]string{"seq 300 | xargs -P 8 -n 30 sh -c 'for i; do truncate -s 49M f$i; done' sh; echo made"}, "--max-worktree-mb", "50")
	if payload["status"] != "budget_exceeded" {
		t.Fatalf("payload %v", payload)
	}
	if files, _ := payload["files_changed"].([]any); len(files) < 10 {
		t.Fatalf("files_changed %v", payload["files_changed"])
	}
	patch, err := os.ReadFile(filepath.Join(payload["run_dir"].(string), "diff.patch"))
	if err != nil {
		t.Fatal(err)
	}
	// The 50 MB budget reads one 49 MB file; the rest are not in the patch.
	if n := strings.Count(string(patch), "diff --git "); n > 2 {
		t.Errorf("%d files were read for the patch:\n%.600s", n, patch)
	}
}

// A host run killed mid-command never reaches finalize: the worker's
// repositories are still in its worktree, and a gitfile may lead into its
// private git dir, which outlives the kill until the next run sweeps it.
// What the operator does next (git status in the worktree, lane list,
// runs list, reconcile) must run none of the worker's config, the
// cleanup must quarantine those repositories as finalize would have, and
// the work must be kept. (A git run inside one of them before any
// dirtywork command runs the worker's config: nothing of dirtywork runs
// between the kill and then.)
func TestKilledHostRunArmsNothing(t *testing.T) {
	t.Parallel()
	for _, cred := range escapeUsers(t) {
		for _, after := range []string{"reconcile", "accept", "snapshot"} {
			t.Run(userName(cred)+"/"+after, func(t *testing.T) {
				e := newEscapeRun(t, cred)
				slug, wt := e.killedPlantingRun()
				// The worktree's own git is the lane's (the jail covered its .git).
				_ = e.command(wt, "git", "status").Run()
				e.noMarker("git status in the worktree")
				steps := [][]string{{"lane", "list", "--repo", e.repo}, {"runs", "list"}}
				ref := "refs/heads/dirtywork/" + slug
				switch after {
				case "reconcile":
					steps = append(steps, []string{"runs", "reconcile", "--dry-run"}, []string{"runs", "reconcile"})
					ref = "refs/dirtywork/parked/" + slug
				case "accept":
					steps = append(steps, []string{"runs", "accept", slug})
				case "snapshot":
					steps = append(steps, []string{"runs", "snapshot", slug})
				}
				for _, args := range steps {
					out, errOut, code := e.dirtywork(args...)
					t.Logf("%v: exit %d\n%s%s", args, code, out, errOut)
					e.noMarker(strings.Join(args, " "))
				}
				if got, err := e.command(e.repo, "git", "-C", e.repo, "show", ref+":kept.txt").Output(); err != nil || string(got) != "work\n" {
					t.Errorf("the work is not at %s: %q %v", ref, got, err)
				}
				// The worker's repositories went into the quarantine, as
				// finalize would have moved them, not into the commit.
				if tree := e.git(e.repo, "ls-tree", "-r", "--name-only", ref); strings.Contains(tree, "sub/") || strings.Contains(tree, ".git") {
					t.Errorf("the commit holds the worker's repositories:\n%s", tree)
				}
				// What no diff shows is taken out and listed, as the
				// finalize's seal would have.
				if _, err := os.Lstat(filepath.Join(wt, "hidden", "mod.py")); !os.IsNotExist(err) {
					t.Errorf("the worker's ignored file is still in the worktree: %v", err)
				}
				rec := readJSONFile(t, filepath.Join(e.dir, ".dirtywork", "runs", slug, "run.json"))
				if ic := fmt.Sprint(rec["ignored_changes"]); !strings.Contains(ic, "hidden/mod.py") {
					t.Errorf("ignored_changes %s lacks hidden/mod.py", ic)
				}
			})
		}
	}
}

// killedPlantingRun starts a host run whose worker leaves repositories
// with its core.fsmonitor in the tree (a nested .git, a bare-shaped sub/,
// a gitfile into its private git dir) and kills dirtywork while the
// command still runs. It returns the run's slug and worktree.
func (e *escapeRun) killedPlantingRun() (string, string) {
	t := e.t
	t.Helper()
	touch := "touch " + e.marker
	plant := "git init -q evil && git -C evil config core.fsmonitor '" + touch + "' && " +
		"git init -q --bare sub && git -C sub config core.bare false && git -C sub config core.worktree .. && " +
		"git -C sub config core.fsmonitor '" + touch + "' && " +
		"git config core.fsmonitor '" + touch + "' && mkdir -p priv && echo \"gitdir: $(git rev-parse --absolute-git-dir)\" > priv/.git && " +
		"mkdir hidden && printf '*\\n' > hidden/.gitignore && echo 'x = 1' > hidden/mod.py && " +
		"echo work > kept.txt && touch ready && sleep 60"
	srv := startScripted(t, map[string]any{"turns": []map[string]any{
		{"tool_calls": []map[string]any{{"name": "bash", "arguments": map[string]any{"command": plant}}}},
		{"finish": "done"},
	}})
	cmd := e.command(e.repo, e.bin, "run", "--sandbox", "none", "--repo", e.repo, "--base-url", srv,
		"--model", scripted.DefaultModel, "--context-window", "32768", "plant and wait")
	cmd.Env = append(cmd.Env, testMainEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wt string
	for deadline := time.Now().Add(30 * time.Second); wt == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(e.repo, ".worktrees", "*", "ready")); len(m) == 1 {
			wt = filepath.Dir(m[0])
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if wt == "" {
		t.Fatal("the worker's command never got going")
	}
	// The jail dies with its parent; wait until nothing writes the tree:
	// the worker's shell (its command line holds the marker) is gone.
	waitFor(t, func() bool { return !strings.Contains(pgrep(t), e.marker) })
	return strings.TrimPrefix(filepath.Base(wt), "dw-"), wt
}
