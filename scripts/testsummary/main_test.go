package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// A parallel test's failure is reported with its own lines only, however
// its neighbours' lines interleave with them; passing tests' lines are not.
func TestFailingTestsOwnOutput(t *testing.T) {
	t.Parallel()
	events := []event{
		{Action: "run", Package: "p", Test: "TestA"},
		{Action: "run", Package: "p", Test: "TestB"},
		{Action: "output", Package: "p", Test: "TestA", Output: "    a_test.go:1: noise from A\n"},
		{Action: "output", Package: "p", Test: "TestB", Output: "    b_test.go:9: why B failed\n"},
		{Action: "output", Package: "p", Test: "TestA", Output: "--- PASS: TestA (0.00s)\n"},
		{Action: "pass", Package: "p", Test: "TestA"},
		{Action: "output", Package: "p", Test: "TestB", Output: "--- FAIL: TestB (1.00s)\n"},
		{Action: "fail", Package: "p", Test: "TestB"},
		{Action: "run", Package: "p", Test: "TestC"},
		{Action: "skip", Package: "p", Test: "TestC"},
		{Action: "output", Package: "p", Output: "FAIL\tp\t1.2s\n"},
		{Action: "fail", Package: "p"},
		{Action: "build-output", ImportPath: "q [q.test]", Output: "q/x.go:3:1: syntax error\n"},
		{Action: "build-fail", ImportPath: "q [q.test]"},
		{Action: "output", Package: "q", Output: "FAIL\tq [build failed]\n"},
		{Action: "fail", Package: "q"},
	}
	s := newSummary()
	for _, e := range events {
		s.take(e, io.Discard)
	}
	var out strings.Builder
	s.report(&out)
	got := out.String()
	for _, want := range []string{"---- p TestB ----\n    b_test.go:9: why B failed\n--- FAIL: TestB", "q/x.go:3:1: syntax error"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "noise from A") {
		t.Errorf("a passing test's lines are in the report:\n%s", got)
	}
	if s.passed != 1 || s.failed != 1 || s.skipped != 1 {
		t.Errorf("counted %d passed, %d failed, %d skipped; want 1 each", s.passed, s.failed, s.skipped)
	}
	if want := []string{"FAIL\tp\t1.2s", "FAIL\tq [build failed]"}; strings.Join(s.packageLines, "|") != strings.Join(want, "|") {
		t.Errorf("package lines %q, want %q", s.packageLines, want)
	}
}

// A long failure keeps its last lines and says how many went before.
func TestTailKeepsTheLastLines(t *testing.T) {
	t.Parallel()
	var tl tail
	for i := range maxLines + 5 {
		b, _ := json.Marshal(i)
		tl.add(string(b) + "\n")
	}
	var out strings.Builder
	tl.writeTo(&out)
	if !strings.HasPrefix(out.String(), "    [5 earlier lines in the log]\n5\n") || !strings.HasSuffix(out.String(), "154\n") {
		t.Errorf("tail:\n%s", out.String())
	}
}
