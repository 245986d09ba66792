//go:build docker

package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// Each way a worker forged a passing verify with an empty diff fails in
// docker mode too.
func TestVerifyForgeriesFailInDockerMode(t *testing.T) {
	t.Parallel()
	requireDaemon(t)
	bin := buildDirtywork(t)
	for _, f := range forgeries() {
		t.Run(f.name, func(t *testing.T) {
			payload := dockerBashRun(t, bin, f.commands("src"), "--verify", f.verify("src"), "--verify-rounds", "0")
			record := assertForgeryFailed(t, payload)
			if f.check != nil {
				f.check(t, record, "src")
			}
		})
	}
}

// dockerBashRun runs the scripted worker's bash commands, then finish, in
// docker mode with the extra flags, and returns the stdout object.
func dockerBashRun(t *testing.T, bin string, commands []string, extra ...string) map[string]any {
	t.Helper()
	d := newDockerRun(t, bin, func([]string) any {
		var turns []any
		for _, c := range commands {
			turns = append(turns, toolCall("bash", map[string]any{"command": c}))
		}
		return map[string]any{"turns": append(turns, map[string]any{"finish": "done"})}
	})
	d.removeLeftovers()
	cmd := d.command(t.Context(), "forge the verify")
	task := cmd.Args[len(cmd.Args)-1]
	cmd.Args = append(append(cmd.Args[:len(cmd.Args)-1], extra...), task)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	var ee *exec.ExitError
	if err := cmd.Run(); err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	var payload map[string]any
	if err := json.Unmarshal([]byte(out.String()), &payload); err != nil {
		t.Fatalf("stdout %q: %v\n%s", out.String(), err, errOut.String())
	}
	for _, r := range toolResults(t, payload) {
		t.Logf("tool result: %.300s", r)
	}
	return payload
}
