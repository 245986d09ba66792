package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
