package sshserve

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

// newKey makes a client key pair and its authorized_keys line.
func newKey(t *testing.T, comment string) (gossh.Signer, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(string(gossh.MarshalAuthorizedKey(signer.PublicKey())))
	if comment != "" {
		line += " " + comment
	}
	return signer, line
}

func writeFile(t *testing.T, dir, name string, lines ...string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadKeysGivesEachKeyItsRole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	watch, watchLine := newKey(t, "phone")
	review, reviewLine := newKey(t, "laptop")
	both, bothLine := newKey(t, "")
	stranger, _ := newKey(t, "")
	restricted, restrictedLine := newKey(t, "")
	auth := writeFile(t, dir, "authorized_keys",
		"# the operator's keys", "", watchLine, bothLine, `command="/bin/true",restrict `+restrictedLine)
	rev := writeFile(t, dir, "review_keys", reviewLine, bothLine)
	k, err := LoadKeys(KeyFile{Path: auth, Role: Watch}, KeyFile{Path: rev, Role: Review})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		key    gossh.Signer
		role   Role
		authed bool
	}{
		{"authorized_keys alone: watch", watch, Watch, true},
		{"review file alone: review", review, Review, true},
		{"in both: the stronger role", both, Review, true},
		{"in neither: refused", stranger, 0, false},
		{"with options: left out", restricted, 0, false},
	} {
		role, ok := k.Role(tc.key.PublicKey())
		if ok != tc.authed || role != tc.role {
			t.Errorf("%s: role %v, authorized %v; want %v, %v", tc.name, role, ok, tc.role, tc.authed)
		}
	}
	if k.Len() != 3 {
		t.Errorf("%d keys, want 3", k.Len())
	}
	if len(k.Skipped) != 1 || !strings.Contains(k.Skipped[0], "authorized_keys:5") {
		t.Errorf("skipped = %q", k.Skipped)
	}
	if _, ok := k.Role(nil); ok {
		t.Error("no key was authorized")
	}
}

func TestLoadKeysRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, line := newKey(t, "")
	good := writeFile(t, dir, "good", line)
	unreadable := filepath.Join(dir, "unreadable")
	if err := os.Mkdir(unreadable, 0o700); err != nil { // a directory cannot be read as a file, even by root
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		files []KeyFile
		want  string
	}{
		{"missing file", []KeyFile{{Path: good, Role: Watch}, {Path: filepath.Join(dir, "nope"), Role: Review}}, "no such file"},
		{"unreadable file", []KeyFile{{Path: unreadable, Role: Watch}}, "is a directory"},
		{"malformed line", []KeyFile{{Path: writeFile(t, dir, "bad", line, "ssh-ed25519 not-base64!!"), Role: Watch}}, "bad:2: not a public key line"},
		{"a private key by mistake", []KeyFile{{Path: writeFile(t, dir, "priv", "-----BEGIN OPENSSH PRIVATE KEY-----"), Role: Watch}}, "priv:1: not a public key line"},
		{"no key at all", []KeyFile{{Path: writeFile(t, dir, "empty", "# nobody yet"), Role: Watch}}, "nobody could connect"},
		{"only keys with options", []KeyFile{{Path: writeFile(t, dir, "opts", "from=\"10.0.0.1\" "+line), Role: Watch}}, "nobody could connect"},
	} {
		k, err := LoadKeys(tc.files...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: keys %v, error %v; want an error with %q", tc.name, k, err, tc.want)
		}
	}
}

func TestHostKeyIsMadeOnceAndKeptPrivate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "home", "ssh")
	path := filepath.Join(dir, "host_ed25519")
	first, err := HostKey(path)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.ParsePrivateKey(first)
	if err != nil || signer.PublicKey().Type() != gossh.KeyAlgoED25519 {
		t.Fatalf("host key %v: %v", signer, err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700} {
		info, err := os.Stat(p)
		if err != nil || info.Mode().Perm() != want {
			t.Fatalf("%s: mode %v (%v), want %04o", p, info.Mode().Perm(), err, want)
		}
	}
	again, err := HostKey(path)
	if err != nil || string(again) != string(first) {
		t.Fatalf("a restart made another host key (%v)", err)
	}
	fp1, _ := Fingerprint(first)
	if fp1 != gossh.FingerprintSHA256(signer.PublicKey()) {
		t.Fatalf("fingerprint %s", fp1)
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := HostKey(path); err == nil || !strings.Contains(err.Error(), "read by others") {
		t.Fatalf("a world-readable host key was used: %v", err)
	}
	junk := writeFile(t, t.TempDir(), "junk", "not a key")
	if _, err := HostKey(junk); err == nil || !strings.Contains(err.Error(), "not an unencrypted private key") {
		t.Fatalf("a junk host key was used: %v", err)
	}
}
