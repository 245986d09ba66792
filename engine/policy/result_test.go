package policy_test

import (
	"testing"

	"github.com/dirtywork/dirtywork/engine/policy"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name   string
		result string
		code   int
		ok     bool
	}{
		{"zero", "exit code: 0\nok", 0, true},
		{"non-zero", "exit code: 3\n", 3, true},
		{"no output", "exit code: 127", 127, true},
		{"trailing space", "exit code: 7 \r\nx", 7, true},
		{"negative", "exit code: -1\n", -1, true},
		{"only the first line counts", "ERROR: bash failed: x\nexit code: 0", 0, false},
		{"timeout", "ERROR: command timed out after 5s — it did not finish", 0, false},
		{"blocked", policy.RuleSudo.Message(), 0, false},
		{"not a number", "exit code: x\n", 0, false},
		{"empty", "", 0, false},
		{"prefix must start the line", " exit code: 0", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, ok := policy.ExitCode(tc.result)
			if code != tc.code || ok != tc.ok {
				t.Errorf("ExitCode(%q) = %d, %v; want %d, %v", tc.result, code, ok, tc.code, tc.ok)
			}
		})
	}
}

func TestIsTimeout(t *testing.T) {
	tests := []struct {
		result string
		want   bool
	}{
		{"ERROR: command timed out after 120s — it did not finish and its result is unknown.", true},
		{"ERROR: grep timed out after 30s — narrow the pattern or path.", false},
		{"exit code: 124\nERROR: command timed out after 5s", false},
		{"error: command timed out after 5s", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := policy.IsTimeout(tc.result); got != tc.want {
			t.Errorf("IsTimeout(%q) = %v; want %v", tc.result, got, tc.want)
		}
	}
}

func TestIsBlocked(t *testing.T) {
	tests := []struct {
		result string
		want   bool
	}{
		{"BLOCKED: sudo is not allowed. Rework the command to stay inside the worktree.", true},
		{"exit code: 1\nBLOCKED: x", false},
		{"ERROR: bash failed: x", false},
	}
	for _, tc := range tests {
		if got := policy.IsBlocked(tc.result); got != tc.want {
			t.Errorf("IsBlocked(%q) = %v; want %v", tc.result, got, tc.want)
		}
	}
}
