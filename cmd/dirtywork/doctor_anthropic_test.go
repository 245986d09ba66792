//go:build linux

package main

import (
	"strings"
	"testing"
)

// TestDoctorAnthropic: doctor --provider anthropic checks the key is set,
// then lists the API's models with it (and with nothing else).
func TestDoctorAnthropic(t *testing.T) {
	e := newE2E(t, `{"model": "claude-sonnet-4-5", "turns":[]}`)
	root := strings.TrimSuffix(e.base, "/v1")
	env := []string{"DIRTYWORK_HOME=" + e.home, "XDG_CONFIG_HOME=" + t.TempDir()}

	checks, _, _ := doctorJSON(t, append(env, "ANTHROPIC_API_KEY="), "--provider", "anthropic", "--base-url", root)
	if c := checks["model server"]; c.Status != checkFail || c.Problem != "ANTHROPIC_API_KEY is not set" || !strings.Contains(c.Fix, "export ANTHROPIC_API_KEY") {
		t.Errorf("without a key: %+v", c)
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("%d requests sent without a key", n)
	}

	checks, _, _ = doctorJSON(t, append(env, "ANTHROPIC_API_KEY="+anthropicKey), "--provider", "anthropic", "--base-url", root, "--model", "claude-sonnet-4-5")
	if c := checks["model server"]; c.Status != checkOK || !strings.Contains(c.Detail, "claude-sonnet-4-5") {
		t.Errorf("with a key: %+v", c)
	}
	checks, _, _ = doctorJSON(t, append(env, "ANTHROPIC_API_KEY="+anthropicKey), "--provider", "anthropic", "--base-url", root, "--model", "claude-other")
	if c := checks["model server"]; c.Status != checkFail || !strings.Contains(c.Fix, "pick one of the listed models") {
		t.Errorf("unknown model: %+v", c)
	}
	for _, r := range e.srv.Requests() {
		if r.Path != "/v1/models" || r.Header.Get("X-Api-Key") != anthropicKey {
			t.Errorf("%s %s with key %q", r.Method, r.Path, r.Header.Get("X-Api-Key"))
		}
	}
	if _, errOut, code, err := runCLIProcess(t, "", env, "doctor", "--provider", "bogus"); err != nil || code != 2 || !strings.Contains(errOut, "--provider must be openai or anthropic") {
		t.Errorf("bogus provider: exit %d %q %v", code, errOut, err)
	}
}
