//go:build linux

package jail

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEtcSecretsAreCovered: the jail's /etc is the host's, read-only, but
// every secret of it the host has — password hashes, sudo rules, SSH host
// keys, TLS private keys, stored credentials — reads as nothing inside,
// even to a worker the jail maps to the operator's uid (root here). The
// rest of /etc stays readable: toolchains need it.
func TestEtcSecretsAreCovered(t *testing.T) {
	var present []string
	for _, p := range etcSecrets {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
			present = append(present, p)
		}
	}
	for _, g := range etcSecretGlobs {
		m, _ := filepath.Glob(g)
		present = append(present, m...)
	}
	// Debian always has these two: the test cannot pass by finding nothing.
	for _, must := range []string{"/etc/shadow", "/etc/gshadow"} {
		if !slices.Contains(present, must) {
			t.Fatalf("%s is not on this host: the test would prove nothing", must)
		}
	}
	host, err := os.ReadFile("/etc/shadow")
	if err != nil || len(host) == 0 {
		t.Fatalf("the host's /etc/shadow must be readable to the test (run as root): %v", err)
	}

	var script strings.Builder
	for _, p := range present {
		// A covered file reads empty (or not at all); a covered directory
		// lists nothing.
		script.WriteString("if [ -d '" + p + "' ]; then echo \"" + p + " $(ls -A '" + p + "' 2>/dev/null | wc -l)\"; " +
			"else echo \"" + p + " $(cat '" + p + "' 2>/dev/null | wc -c)\"; fi\n")
	}
	script.WriteString("echo /etc/passwd $(grep -c '^root:' /etc/passwd)\n")
	script.WriteString("{ echo x >> /etc/shadow; } 2>/dev/null && echo wrote-shadow\ntrue\n")
	r := bash(t, Config{}, script.String())
	if r.err != nil {
		t.Fatalf("%s", describe(r))
	}
	got := map[string]string{}
	for _, l := range lines(r.out) {
		if k, v, ok := strings.Cut(l, " "); ok {
			got[k] = strings.TrimSpace(v)
		} else {
			t.Errorf("unexpected line %q", l)
		}
	}
	for _, p := range present {
		if got[p] != "0" {
			t.Errorf("%s shows %q bytes or entries inside the jail, want 0", p, got[p])
		}
	}
	if got["/etc/passwd"] != "1" {
		t.Errorf("/etc/passwd inside: %q root entries, want 1 (the rest of /etc stays readable)\n%s", got["/etc/passwd"], describe(r))
	}
	if strings.Contains(r.out, "wrote-shadow") {
		t.Error("the jail's /etc/shadow took a write")
	}
	if after, _ := os.ReadFile("/etc/shadow"); string(after) != string(host) {
		t.Error("the host's /etc/shadow changed")
	}
}
