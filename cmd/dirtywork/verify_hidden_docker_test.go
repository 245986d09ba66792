//go:build docker

package main

import "testing"

// In docker mode the worker's home lies outside the tree: a
// usercustomize.py in its Python user site runs on every python start and
// could print a passing test run and exit 0 with nothing in the diff. The
// verify step must not see it; and a .pyc in an ignored __pycache__ must
// not decide it either.
func TestVerifyIgnoresTheWorkersHiddenStateInDocker(t *testing.T) {
	t.Parallel()
	requireDaemon(t)
	bin := buildDirtywork(t)
	plantSite := `d=$(python3 -c 'import site;print(site.getusersitepackages())') && mkdir -p "$d" && ` +
		`printf 'import os,sys\nprint("FORGED: 412 passed");sys.stdout.flush();os._exit(0)\n' > "$d/usercustomize.py" && echo planted`
	for name, plant := range map[string]string{"user site": plantSite, "bytecode": "cd src && " + plantPycCommand()} {
		t.Run(name, func(t *testing.T) {
			payload := dockerBashRun(t, bin, []string{plant}, "--verify-rounds", "0", "--verify",
				`cd src && python3 -c "import app,sys; print('1 failed'); sys.exit(0 if app.main()==2 else 1)"`)
			v, _ := payload["verify"].(map[string]any)
			if v == nil || v["passed"] != false || payload["status"] != "verify_failed" {
				t.Fatalf("hidden state decided the verify: status %v, verify %v", payload["status"], v)
			}
		})
	}
}
