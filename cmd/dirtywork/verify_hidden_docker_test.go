//go:build docker

package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// In docker mode the worker's home lies outside the tree: a
// usercustomize.py in its Python user site runs on every python start and
// could print a passing test run and exit 0 with nothing in the diff. The
// verify step must not see it; and a .pyc in an ignored __pycache__ must
// not decide it either.
func TestVerifyIgnoresTheWorkersHiddenStateInDocker(t *testing.T) {
	requireDaemon(t)
	bin := buildDirtywork(t)
	plantSite := `d=$(python3 -c 'import site;print(site.getusersitepackages())') && mkdir -p "$d" && ` +
		`printf 'import os,sys\nprint("FORGED: 412 passed");sys.stdout.flush();os._exit(0)\n' > "$d/usercustomize.py" && echo planted`
	for name, plant := range map[string]string{"user site": plantSite, "bytecode": "cd src && " + plantPycCommand()} {
		t.Run(name, func(t *testing.T) {
			d := newDockerRun(t, bin, func([]string) any {
				return map[string]any{"turns": []any{
					toolCall("bash", map[string]any{"command": plant}),
					map[string]any{"finish": "done"},
				}}
			})
			d.removeLeftovers()
			cmd := d.command(t.Context(), "plant hidden state")
			task := cmd.Args[len(cmd.Args)-1]
			cmd.Args = append(cmd.Args[:len(cmd.Args)-1], "--verify-rounds", "0", "--verify",
				`cd src && python3 -c "import app,sys; print('1 failed'); sys.exit(0 if app.main()==2 else 1)"`, task)
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
			v, _ := payload["verify"].(map[string]any)
			if v == nil || v["passed"] != false || payload["status"] != "verify_failed" {
				t.Fatalf("hidden state decided the verify: status %v, verify %v\n%s", payload["status"], v, errOut.String())
			}
		})
	}
}
