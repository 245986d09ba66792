package policy_test

import (
	"testing"

	"github.com/dirtywork/dirtywork/engine/policy"
)

func TestFingerprint(t *testing.T) {
	// T-26: only timing-like tokens are ignored; any other change is a
	// different result.
	type call struct{ command, result string }
	tests := []struct {
		name  string
		a, b  call
		equal bool
	}{
		{"timing only", call{"pytest", "exit code: 1\n5 passed, 1 failed in 24.51s"}, call{"pytest", "exit code: 1\n5 passed, 1 failed in 25.02s"}, true},
		{"milliseconds with a space", call{"make", "exit code: 2\nbuild took 12 ms"}, call{"make", "exit code: 2\nbuild took 340 ms"}, true},
		{"spelled-out units", call{"x", "exit code: 1\nran for 3 minutes and 2 seconds"}, call{"x", "exit code: 1\nran for 4 minutes and 59 seconds"}, true},
		{"clock time", call{"x", "exit code: 1\n[12:30:01] start\n[12:30:05.123] fail"}, call{"x", "exit code: 1\n[09:15:59] start\n[9:16:00.9] fail"}, true},
		{"ISO timestamp", call{"x", "exit code: 1\nat 2024-01-02T10:20:30.123Z"}, call{"x", "exit code: 1\nat 2025-12-31 23:59:59+05:30"}, true},
		{"commit id", call{"git log -1", "exit code: 1\ncommit 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"}, call{"git log -1", "exit code: 1\ncommit ffffffffffffffffffffffffffffffffffffffff"}, true},
		{"short commit id", call{"x", "exit code: 1\nHEAD is now at 1a2b3c4 msg"}, call{"x", "exit code: 1\nHEAD is now at 9f8e7d6 msg"}, true},
		{"test count", call{"pytest", "exit code: 1\n5 passed, 1 failed"}, call{"pytest", "exit code: 1\n6 passed, 1 failed"}, false},
		{"exit status", call{"pytest", "exit code: 1\nfailed"}, call{"pytest", "exit code: 2\nfailed"}, false},
		{"first line kept verbatim", call{"x", "exit code: 1 after 3s\nfailed"}, call{"x", "exit code: 1 after 4s\nfailed"}, false},
		{"command", call{"pytest a", "exit code: 1\nfailed"}, call{"pytest b", "exit code: 1\nfailed"}, false},
		{"counter", call{"x", "exit code: 1\nretry 3 of 5"}, call{"x", "exit code: 1\nretry 4 of 5"}, false},
		{"line number", call{"go build", "exit code: 1\nmain.go:12: undefined: x"}, call{"go build", "exit code: 1\nmain.go:13: undefined: x"}, false},
		{"long decimal", call{"x", "exit code: 0\npi = 3.14159265"}, call{"x", "exit code: 0\npi = 3.14159266"}, false},
		{"long plain number", call{"x", "exit code: 1\nwrote 1234567 bytes"}, call{"x", "exit code: 1\nwrote 1234568 bytes"}, false},
		{"upper-case hex is not an id", call{"x", "exit code: 1\nid DEADBEEF1"}, call{"x", "exit code: 1\nid DEADBEEF2"}, false},
		{"command and result do not run together", call{"ab", "c"}, call{"a", "bc"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fa := policy.Fingerprint(tc.a.command, tc.a.result)
			fb := policy.Fingerprint(tc.b.command, tc.b.result)
			if (fa == fb) != tc.equal {
				t.Errorf("Fingerprint(%q, %q) == Fingerprint(%q, %q) is %v; want %v",
					tc.a.command, tc.a.result, tc.b.command, tc.b.result, fa == fb, tc.equal)
			}
		})
	}
}
