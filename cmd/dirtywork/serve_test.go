package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/tui"
	"github.com/dirtywork/dirtywork/tui/sshserve"
)

// TestServeRefusesBadStarts: a missing or invalid address, and key files
// that cannot be read or parsed, stop the start with exit 2 and a line
// saying what is wrong; nothing listens.
func TestServeRefusesBadStarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	pub := sshKey(t, dir, "k") + ".pub"
	bad := filepath.Join(dir, "bad_keys")
	if err := os.WriteFile(bad, []byte("ssh-ed25519 AAAA-not-base64 someone\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty_keys")
	if err := os.WriteFile(empty, []byte("# nobody\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys := []string{"--authorized-keys", pub}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no address", keys, "serve needs --ssh ADDR"},
		{"no port", append([]string{"--ssh", "127.0.0.1"}, keys...), `--ssh "127.0.0.1": want host:port`},
		{"port not a number", append([]string{"--ssh", "127.0.0.1:ssh"}, keys...), "the port must be a number"},
		{"port too large", append([]string{"--ssh", "127.0.0.1:70000"}, keys...), "the port must be a number"},
		{"unreadable authorized keys", []string{"--ssh", "127.0.0.1:0", "--authorized-keys", filepath.Join(dir, "missing")}, "no such file"},
		{"unreadable review keys", []string{"--ssh", "127.0.0.1:0", "--authorized-keys", pub, "--review-keys", dir}, "is a directory"},
		{"malformed line", []string{"--ssh", "127.0.0.1:0", "--authorized-keys", pub, "--review-keys", bad}, "bad_keys:1: not a public key line"},
		{"no key at all", []string{"--ssh", "127.0.0.1:0", "--authorized-keys", empty}, "nobody could connect"},
		{"an argument", []string{"--ssh", "127.0.0.1:0", "--authorized-keys", pub, "extra"}, "unknown command"},
	} {
		_, errOut, code, err := runCLIProcess(t, "", []string{"DIRTYWORK_HOME=" + home}, append([]string{"serve"}, tc.args...)...)
		if err != nil || code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d (%v), stderr %q; want exit %d and %q", tc.name, code, err, errOut, ExitUsage, tc.want)
		}
		if strings.Contains(errOut, "over SSH on") {
			t.Errorf("%s: the server started", tc.name)
		}
	}
}

// TestServeSessionOptions: a watch session is read-only, a review session
// is not; neither opens an editor; the client's NO_COLOR turns colour off.
func TestServeSessionOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		s        sshserve.Session
		readOnly string
		color    tui.ColorMode
	}{
		{"watch", sshserve.Session{Role: sshserve.Watch, Env: []string{"TERM=xterm"}}, "watch role", tui.ColorDark},
		{"review", sshserve.Session{Role: sshserve.Review, Env: []string{"TERM=xterm"}}, "", tui.ColorDark},
		{"review without colour", sshserve.Session{Role: sshserve.Review, Env: []string{"TERM=xterm", "NO_COLOR=1"}}, "", tui.ColorNone},
		{"no role is read-only", sshserve.Session{}, "watch role", tui.ColorDark},
	} {
		opts := tui.Options{Color: tui.ColorDark}
		sessionOptions(&opts, tc.s)
		if opts.ReadOnly != tc.readOnly || opts.NoEditor == "" || opts.Color != tc.color {
			t.Errorf("%s: read-only %q, no editor %q, colour %v", tc.name, opts.ReadOnly, opts.NoEditor, opts.Color)
		}
	}
}
