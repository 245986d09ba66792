package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchSummarizeUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	results := filepath.Join(dir, "r.jsonl")
	if err := os.WriteFile(results, []byte(`{"model": "m"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope.jsonl")
	for name, tc := range map[string]struct {
		args   []string
		stderr string
	}{
		"missing file":         {[]string{"bench", "summarize", missing}, "error: no such file '" + missing + "'"},
		"missing compare file": {[]string{"bench", "summarize", results, "--compare", missing}, "error: no such file '" + missing + "'"},
		"a directory":          {[]string{"bench", "summarize", dir}, "error: no such file '" + dir + "'"},
		"unknown flag":         {[]string{"bench", "summarize", results, "--bogus"}, "error: unknown flag: --bogus"},
		"no file":              {[]string{"bench", "summarize"}, "error: accepts 1 arg(s), received 0"},
		"two files":            {[]string{"bench", "summarize", results, results}, "error: accepts 1 arg(s), received 2"},
		"compare without file": {[]string{"bench", "summarize", results, "--compare"}, "error: flag needs an argument: --compare"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := runMain(t, tc.args...)
			if code != ExitUsage || out != "" || !strings.HasPrefix(errOut, tc.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
}

// benchFixture copies a results file and the run records of bench's
// testdata into a fresh dirtywork home and returns the home and the copy.
func benchFixture(t *testing.T, name string) (home, results string) {
	t.Helper()
	src := filepath.Join("..", "..", "bench", "testdata")
	home = t.TempDir()
	for _, slug := range []string{"s1", "s2", "s3"} {
		data, err := os.ReadFile(filepath.Join(src, "runs", slug, "run.json"))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(home, "runs", slug)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "run.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(src, name))
	if err != nil {
		t.Fatal(err)
	}
	results = filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(results, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return home, results
}

func TestBenchSummarizeOriginalFile(t *testing.T) {
	home, results := benchFixture(t, "plain.jsonl")
	golden, err := os.ReadFile(filepath.Join("..", "..", "bench", "testdata", "plain.golden"))
	if err != nil {
		t.Fatal(err)
	}
	// The verdicts come from $DIRTYWORK_HOME/runs: without them the table
	// would show the rows' own (none for s1 and s2).
	out, errOut, code := runCLI(t, "", []string{"DIRTYWORK_HOME=" + home}, "bench", "summarize", results)
	if code != ExitOK || out != string(golden) {
		t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	wantErr := "warning: " + results + " line 5: not JSON: unexpected EOF; skipped\n" +
		"warning: " + results + " line 8: not a JSON object but an array; skipped\n"
	if errOut != wantErr {
		t.Errorf("stderr = %q, want %q", errOut, wantErr)
	}
}

func TestBenchSummarizeCompareNamesFilesAsTheOriginal(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.jsonl", "b.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(`{"model": "m", "task": "t"}`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := runCLI(t, dir, []string{"DIRTYWORK_HOME=" + t.TempDir()}, "bench", "summarize", "./a.jsonl", "--compare", ".//b.jsonl")
	if code != ExitOK || !strings.HasPrefix(out, "A = a.jsonl\nB = b.jsonl\n") || errOut != "" {
		t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}
}

func TestBenchSummarizeJSON(t *testing.T) {
	home, results := benchFixture(t, "plain.jsonl")
	out, _, code := runCLI(t, "", []string{"DIRTYWORK_HOME=" + home}, "bench", "summarize", "--json", results)
	var got struct {
		File     string `json:"file"`
		Problems []struct {
			Line int `json:"line"`
		} `json:"problems"`
		A struct {
			Models []struct {
				Model       string   `json:"model"`
				VerdictRate *float64 `json:"verdict_rate"`
			} `json:"models"`
		} `json:"a"`
	}
	if code != ExitOK || json.Unmarshal([]byte(out), &got) != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("exit %d, stdout:\n%s", code, out)
	}
	if got.File != results || len(got.Problems) != 2 || got.Problems[1].Line != 8 || len(got.A.Models) != 2 ||
		got.A.Models[1].Model != "qwen/qwen3-coder-next" || got.A.Models[1].VerdictRate == nil {
		t.Errorf("summary = %+v", got)
	}
}
