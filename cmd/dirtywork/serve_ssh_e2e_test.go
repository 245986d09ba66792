package main

// Mission control over SSH, end to end: the server as a real process, the
// OpenSSH client in a tmux pane.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// sshKey makes a client key pair with ssh-keygen and returns the private
// key's path (the public one is path+".pub").
func sshKey(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	return path
}

var servingRE = regexp.MustCompile(`over SSH on 127\.0\.0\.1:(\d+)`)

// sshArgs are the OpenSSH client's arguments for key, on port.
func sshArgs(key, known, port string) []string {
	return []string{
		"-tt", "-i", key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=" + known, "-p", port, "127.0.0.1",
	}
}

// TestE2ESSHServe: runs served over SSH. A watch key sees the runs, and
// its verdict key is refused in the model (run.json untouched); a review
// key gives a verdict; an unknown key is refused; hostile transcript text
// reaches the client inert; SIGTERM ends the sessions and the server with
// exit 0.
func TestE2ESSHServe(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Fatalf("the OpenSSH client is needed (scripts/test-all installs it): %v", err)
	}
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	payload := headlessRun(t, tmp, home)
	tr := payload["transcript"].(string)
	slug := filepath.Base(filepath.Dir(tr)) // the transcript is in its run's directory
	f, err := os.OpenFile(tr, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []map[string]any{
		{"ts": "2026-11-30T07:38:12.123456+00:00", "event": "assistant", "text": hostileText},
		{"ts": "2026-11-30T07:38:13.123456+00:00", "event": "tool_result", "tool": "bash", "args": "{}", "result": hostileText},
	} {
		line, _ := json.Marshal(ev)
		if _, err := f.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	keys := filepath.Join(tmp, "keys")
	if err := os.Mkdir(keys, 0o700); err != nil {
		t.Fatal(err)
	}
	watch, review, stranger := sshKey(t, keys, "watch"), sshKey(t, keys, "review"), sshKey(t, keys, "stranger")
	known := filepath.Join(keys, "known_hosts")
	var errOut syncBuffer
	server := startCLI(t, "", []string{"DIRTYWORK_HOME=" + home, "TMPDIR=" + tmp}, nil, &errOut,
		"serve", "--ssh", "127.0.0.1:0", "--authorized-keys", watch+".pub", "--review-keys", review+".pub", "--notify", "none")
	var port string
	waitFor(t, func() bool {
		if m := servingRE.FindStringSubmatch(errOut.String()); m != nil {
			port = m[1]
		}
		return port != ""
	})
	if info, err := os.Stat(filepath.Join(home, "ssh", "host_ed25519")); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("host key: %v %v", info, err)
	}

	// A key in neither file is refused.
	out, err := exec.Command("ssh", sshArgs(stranger, known, port)...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Permission denied") {
		t.Fatalf("an unknown key got in: %v\n%s", err, out)
	}

	// The watch key: mission control with the run, read-only.
	w := startTUIWith(t, "ssh", 140, 40, nil, sshArgs(watch, known, port)...)
	raw := filepath.Join(tmp, "watch-pane.raw")
	w.tmux("pipe-pane", "-o", "-t", "e2e", "cat >> "+shellQuote(raw))
	w.waitText("dirtywork mission control", 60*time.Second)
	w.waitText("needs review (1)", 30*time.Second)
	before, err := os.ReadFile(filepath.Join(home, "runs", slug, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	w.keys("n")
	w.waitFreshReview(home)
	w.keys("r")
	w.waitText("read-only session: watch role", 30*time.Second)
	w.keys("a")
	w.keys("c")
	w.waitText("read-only session: watch role", 30*time.Second)
	// Reading still works: the transcript, down to the hostile text,
	// shown with its escapes visible and doing nothing.
	w.keys("t")
	w.waitText("Transcript", 30*time.Second)
	w.keys("G", "h", "Enter")
	w.waitText("␛]0;pwned-title␇", 30*time.Second)
	if title := w.tmux("display-message", "-p", "-t", "e2e", "#{pane_title}"); strings.Contains(title, "pwned") {
		t.Fatalf("the transcript set the terminal title over SSH: %q", title)
	}
	if bufs := strings.TrimSpace(w.tmux("list-buffers")); bufs != "" {
		t.Fatalf("the transcript wrote the clipboard over SSH: %q", bufs)
	}
	if s := w.capture(); !strings.Contains(s, "Transcript") || !strings.Contains(s, "dirtywork mission control") {
		t.Fatalf("the screen was cleared or moved:\n%s", s)
	}
	w.tmux("pipe-pane", "-t", "e2e") // stop recording
	got, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte("␛]0;pwned-title␇")) {
		t.Fatalf("the recording of the pane misses the transcript (%d bytes)", len(got))
	}
	for _, seq := range []string{"\x1b]52;", "\x1b]0;pwned", "\x1b]8;;http://evil", "pwned\x1b", "\u009b31m"} {
		if bytes.Contains(got, []byte(seq)) {
			t.Fatalf("the pane received %q raw", seq)
		}
	}
	after, err := os.ReadFile(filepath.Join(home, "runs", slug, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatalf("a watch session changed run.json:\nbefore %s\nafter  %s", before, after)
	}
	w.keys("C-c")
	w.waitText("[exited 0]", 30*time.Second)

	// The review key gives a verdict.
	r := startTUIWith(t, "ssh", 140, 40, nil, sshArgs(review, known, port)...)
	r.waitText("needs review (1)", 60*time.Second)
	r.keys("n")
	r.waitFreshReview(home)
	r.keys("r")
	waitFor(t, func() bool { return records(t, home)[slug]["verdict"] == "reject" })

	// SIGTERM with the review session open: it ends cleanly, and so does
	// the server.
	if err := server.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r.waitText("[exited 0]", 30*time.Second)
	if err := server.Wait(); err != nil {
		t.Fatalf("the server at SIGINT: %v\n%s", err, errOut.String())
	}
	if log := errOut.String(); !strings.Contains(log, "(watch role") || !strings.Contains(log, "(review role") {
		t.Fatalf("the server's log names no roles:\n%s", log)
	}
}
