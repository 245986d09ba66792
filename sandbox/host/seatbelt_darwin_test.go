package host

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSeatbeltConfinesTheWorkspace opens a workspace as the CLI does on
// macOS, confined by the real sandbox-exec: the worker works on its tree
// and its repository, and cannot read the operator's home nor write the
// worktree's .git or the host's /tmp.
func TestSeatbeltConfinesTheWorkspace(t *testing.T) {
	r := newTestRepo(t)
	secret := filepath.Join(r.home, ".ssh", "id_ed25519")
	writeFile(t, secret, "key")
	cfg := r.config()
	cfg.jailer = nil // the probe's: Seatbelt
	w := open(t, cfg)
	if _, sb := w.jailer.(seatbeltJailer); !sb {
		t.Fatalf("the jailer is %T", w.jailer)
	}
	res := bash(t, w, "echo x > made.txt && git status --porcelain && git log --format=%H -1 && cat /etc/hosts >/dev/null && echo ok")
	if res.ExitCode != 0 || !strings.Contains(res.Output, r.base) || !strings.HasSuffix(strings.TrimSpace(res.Output), "ok") {
		t.Fatalf("work in the tree: exit %d: %s", res.ExitCode, res.Output)
	}
	for _, cmd := range []string{
		"cat " + shellQuote(secret),
		"ls " + shellQuote(r.home),
		"echo x > .git",
		"cat .git",
		"echo x > /tmp/dirtywork-seatbelt-escape",
		"cat " + shellQuote(filepath.Join(r.common, "config")),
	} {
		if res := bash(t, w, cmd); res.ExitCode == 0 {
			t.Errorf("%s succeeded: %s", cmd, res.Output)
		}
	}
}
