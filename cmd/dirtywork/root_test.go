package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// runMain runs the CLI in-process and returns what it printed and its code.
func runMain(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(args, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestHelpListsEveryCommand(t *testing.T) {
	t.Parallel()
	out, _, code := runMain(t, "--help")
	if code != ExitOK {
		t.Fatalf("--help exited %d", code)
	}
	for _, name := range []string{"run", "resume", "runs", "bench", "tui", "demo", "image", "lane", "completion"} {
		if !strings.Contains(out, "\n  "+name+" ") {
			t.Errorf("--help does not list %q:\n%s", name, out)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	out, _, code := runMain(t, "--version")
	if code != ExitOK || !strings.HasPrefix(out, "dirtywork ") || strings.TrimSpace(out) == "dirtywork" {
		t.Fatalf("--version = %q, exit %d", out, code)
	}
	if got := versionOf("v9.9.9"); got != "v9.9.9" {
		t.Fatalf("stamped version = %q", got)
	}
	if got := versionOf(""); !strings.HasPrefix(got, "dev") {
		t.Fatalf("unstamped version = %q, want dev…", got)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"unknown command": {"bogus"},
		"unknown flag":    {"--bogus"},
	} {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := runMain(t, args...)
			if code != ExitUsage || out != "" || !strings.HasPrefix(errOut, "error: ") {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
}

func TestExitCodeMapping(t *testing.T) {
	t.Parallel()
	plain := errors.New("daemon unreachable")
	tests := []struct {
		name      string
		err       error
		code      int
		msg, hint string
	}{
		{"nil is success", nil, ExitOK, "", ""},
		{"unclassified is an environment error", plain, ExitUsage, "daemon unreachable", ""},
		{"usage error", usageErrorf("bad %s", "flag"), ExitUsage, "bad flag", ""},
		{"hint", withHint(plain, "start it"), ExitUsage, "daemon unreachable", "start it"},
		{"wrapped exit error keeps its code and context", fmt.Errorf("ctx: %w", &exitError{Code: 1, Err: plain}), 1, "ctx: daemon unreachable", ""},
		{"silent run failure", silentExit(ExitRunNotCompleted), ExitRunNotCompleted, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg, hint := exitCode(tt.err)
			if code != tt.code || msg != tt.msg || hint != tt.hint {
				t.Fatalf("exitCode = (%d, %q, %q), want (%d, %q, %q)", code, msg, hint, tt.code, tt.msg, tt.hint)
			}
		})
	}
}
