package main

import (
	"encoding/base64"
	"testing"
)

// plantPyc writes, from inside the sandbox, a .pyc for app.py into an
// ignored __pycache__: compiled from other code ("return 2"), its header
// claims app.py's mtime and size, so python would import it in place of
// the source. Nothing of it shows in the diff.
const plantPyc = `import importlib.util, marshal, os, struct, sys
st = os.stat('app.py')
code = compile("def main():\n    return 2\n", "app.py", "exec")
data = importlib.util.MAGIC_NUMBER + struct.pack('<III', 0, int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF) + marshal.dumps(code)
os.makedirs('__pycache__', exist_ok=True)
open('__pycache__/app.' + sys.implementation.cache_tag + '.pyc', 'wb').write(data)
`

// plantPycCommand is plantPyc as one bash command (no heredoc, no
// redirect outside the tree).
func plantPycCommand() string {
	return "echo " + base64.StdEncoding.EncodeToString([]byte(plantPyc)) + " | base64 -d > p.py && python3 p.py && rm p.py && echo planted"
}

// verifyApp2 passes only if app.main() returns 2, which the reviewed
// source does not.
const verifyApp2 = `python3 -c "import app,sys; sys.exit(0 if app.main()==2 else 1)"`

// The verify outcome is evidence for the reviewer: hidden state the worker
// left where the diff does not show it (a .pyc in an ignored __pycache__)
// must not decide it.
func TestVerifyIgnoresHiddenBytecode(t *testing.T) {
	t.Parallel()
	for _, cred := range escapeUsers(t) {
		t.Run(userName(cred), func(t *testing.T) {
			e := newEscapeRun(t, cred)
			e.write(".gitignore", "__pycache__/\n")
			e.git(e.repo, "add", ".gitignore")
			e.git(e.repo, "commit", "-qm", "ignore bytecode")
			payload := e.run([]string{plantPycCommand()}, "--verify", verifyApp2, "--verify-rounds", "0")
			v, _ := payload["verify"].(map[string]any)
			if v == nil || v["passed"] != false || payload["status"] != "verify_failed" {
				t.Fatalf("the hidden bytecode decided the verify: status %v, verify %v", payload["status"], v)
			}
		})
	}
}
