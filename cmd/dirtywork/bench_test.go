package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/engine"
)

// Every bad bench command line is a usage error (exit 2) that says what
// is wrong, prints nothing on stdout and writes no results file.
func TestBenchRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"no models":        {[]string{"bench"}, "--models is required"},
		"blank models":     {[]string{"bench", "--models", " "}, "--models is required"},
		"unknown task":     {[]string{"bench", "--models", "m", "--tasks", "py-windows,nope"}, "unknown bench task(s): nope (available: big-inventory, go-roman,"},
		"no task":          {[]string{"bench", "--models", "m", "--tasks", ","}, "--tasks names no task"},
		"repo given":       {[]string{"bench", "--models", "m", "--repo", dir}, "--repo is not a bench flag"},
		"sandbox given":    {[]string{"bench", "--models", "m", "--sandbox", "none"}, "--sandbox is not a bench flag"},
		"zero repeats":     {[]string{"bench", "--models", "m", "--repeats", "0"}, "must be at least 1"},
		"negative fix":     {[]string{"bench", "--models", "m", "--fix-rounds", "-1"}, "--fix-rounds at least 0"},
		"resume and out":   {[]string{"bench", "--models", "m", "--resume", out, "--out", filepath.Join(dir, "other.jsonl")}, "not both"},
		"resume missing":   {[]string{"bench", "--models", "m", "--resume", out}, "is no results file of a sweep"},
		"resume directory": {[]string{"bench", "--models", "m", "--resume", dir}, "is not a results file"},
		"bad spec":         {[]string{"bench", "--models", "m#0"}, "slots"},
		"empty host":       {[]string{"bench", "--models", "m", "--docker-host", "unix:///a.sock,"}, "--docker-host: an empty engine address"},
		"host twice":       {[]string{"bench", "--models", "m", "--docker-host", "unix:///a.sock,unix:///a.sock"}, "given twice"},
		"bad run flag":     {[]string{"bench", "--models", "m", "--max-turns", "0"}, "--max-turns must be at least 1"},
		"anthropic no key": {[]string{"bench", "--models", "m@anthropic"}, "needs an API key"},
		"positional":       {[]string{"bench", "--models", "m", "extra"}, "error: "},
		"no engine":        {[]string{"bench", "--models", "m", "--out", out}, "docker engine of the environment: "},
	} {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := runMain(t, c.args...)
			if code != ExitUsage || stdout != "" || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, stdout, stderr, c.want)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a refused bench wrote %s (%v)", out, err)
	}
}

// A spec's gaps are filled from the run settings (B-3), with the
// provider's own default URL when the spec names another provider, so
// rows, slots and resumes all see the server a case really talks to.
func TestResolveModelSpecs(t *testing.T) {
	t.Parallel()
	base := engine.Spec{Provider: "openai", BaseURL: "http://gpu:1234/v1"}
	specs := []bench.ModelSpec{
		{Model: "a"},
		{Model: "b", Provider: "anthropic"},
		{Model: "c", BaseURL: "http://other/v1"},
	}
	resolveModelSpecs(specs, base)
	want := [][2]string{{"openai", "http://gpu:1234/v1"}, {"anthropic", defaultAnthropicURL}, {"openai", "http://other/v1"}}
	for i, m := range specs {
		if m.Provider != want[i][0] || m.BaseURL != want[i][1] {
			t.Errorf("%s: %s %s, want %v", m.Model, m.Provider, m.BaseURL, want[i])
		}
	}
}
