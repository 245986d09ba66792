package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

// TestAPIKeyGoesOnlyWhereItWasGiven: OPENAI_API_KEY never leaves for an
// arbitrary --base-url; DIRTYWORK_API_KEY does, and a config file key goes
// only to the base URL it names.
func TestAPIKeyGoesOnlyWhereItWasGiven(t *testing.T) {
	e := newE2E(t, `{"turns":[{"finish":"a"},{"finish":"b"},{"finish":"c"},{"finish":"d"},{"finish":"e"}]}`)
	cfgDir := filepath.Join(t.TempDir(), "xdg")
	if err := os.MkdirAll(filepath.Join(cfgDir, "dirtywork"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(cfgDir, "dirtywork", "config.toml")
	writeCfg := func(content string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	seen := 0
	run := func(env ...string) (auth []string, errOut string, code int) {
		t.Helper()
		args := []string{
			"run", "--sandbox", "none", "--repo", e.repo, "--base-url", e.base,
			"--model", scripted.DefaultModel, "--context-window", "32768", "task",
		}
		env = append(env, "DIRTYWORK_HOME="+e.home, "XDG_CONFIG_HOME="+cfgDir)
		_, errOut, code, err := runCLIProcess(t, "", env, args...)
		if err != nil {
			t.Fatal(err)
		}
		reqs := e.srv.Requests()
		for _, r := range reqs[seen:] {
			auth = append(auth, r.Header.Get("Authorization"))
		}
		seen = len(reqs)
		return auth, errOut, code
	}
	only := func(name string, auth []string, want string) {
		t.Helper()
		if len(auth) == 0 {
			t.Fatalf("%s: no request reached the server", name)
		}
		for _, a := range auth {
			if a != want {
				t.Fatalf("%s: Authorization %q, want %q", name, a, want)
			}
		}
	}

	writeCfg("")
	auth, _, code := run("OPENAI_API_KEY=sk-real-openai-key")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	only("OPENAI_API_KEY alone", auth, "")

	auth, _, _ = run("OPENAI_API_KEY=sk-real-openai-key", "DIRTYWORK_API_KEY=dw-key")
	only("DIRTYWORK_API_KEY", auth, "Bearer dw-key")

	writeCfg("[api-keys]\n\"" + strings.ToUpper(e.base[:4]) + e.base[4:] + "/\" = \"cfg-key\"\n\"http://elsewhere:1/v1\" = \"other\"\n")
	auth, _, _ = run("OPENAI_API_KEY=sk-real-openai-key")
	only("config key for this URL", auth, "Bearer cfg-key")

	writeCfg("[api-keys]\n\"" + e.base + "\" = { env = \"MY_SERVER_KEY\" }\n")
	auth, _, _ = run("MY_SERVER_KEY=from-env")
	only("config key from a variable", auth, "Bearer from-env")

	writeCfg("[api-keys]\n\"http://elsewhere:1/v1\" = \"other\"\n")
	auth, _, _ = run("OPENAI_API_KEY=sk-real-openai-key")
	only("config key for another URL", auth, "")

	for content, want := range map[string]string{
		"[api-keys]\n\"not a url\" = \"k\"\n":           "config.toml:1: 'api-keys'",
		"max-turns = 3\napi-keys = 5\n":                 "config.toml:2: 'api-keys' must be a table",
		"[api-keys]\n\"http://h/v1\" = { e = \"X\" }\n": "must be a string or { env",
	} {
		writeCfg(content)
		if _, errOut, code := run(); code != 2 || !strings.Contains(errOut, want) {
			t.Fatalf("config %q: exit %d, stderr %q; want %q", content, code, errOut, want)
		}
	}
}

func TestUnsentKeyIsNamedWhenTheServerRefuses(t *testing.T) {
	e := newE2E(t, `{"turns":[]}`)
	env := []string{"OPENAI_API_KEY=sk-real", "DIRTYWORK_HOME=" + e.home, "XDG_CONFIG_HOME=" + t.TempDir()}
	_, errOut, code, err := runCLIProcess(t, "", env, "run", "--sandbox", "none", "--repo", e.repo,
		"--base-url", "http://127.0.0.1:1/v1", "task")
	if err != nil || code != 2 || !strings.Contains(errOut, "note: OPENAI_API_KEY is not sent to model servers; set DIRTYWORK_API_KEY, or tie the key to http://127.0.0.1:1/v1 under [api-keys]") {
		t.Fatalf("exit %d, stderr %q, %v", code, errOut, err)
	}
}
