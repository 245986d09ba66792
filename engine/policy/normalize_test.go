package policy

import (
	"strings"
	"testing"
)

func TestNormalizeResult(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"single line untouched", "exit code: 0 12:30 5s", "exit code: 0 12:30 5s"},
		{"head kept, body normalized", "exit code: 0 5s\nok 5s", "exit code: 0 5s\nok "},
		{"decimal seconds", "\nin 24.51s.", "\nin ."},
		{"units end at a word boundary", "\n5 sx 5msx 5 hours", "\n5 sx 5msx "},
		{"only one space before a unit", "\n5  s", "\n5  s"},
		{"number start is not bounded", "\ntook12ms", "\ntook"},
		{"unit names are case-sensitive", "\n5 MS", "\n5 MS"},
		{"clock with fraction", "\nat 1:02:03,5 ok", "\nat  ok"},
		{"clock needs two minute digits", "\n1:2", "\n1:2"},
		{"clock inside a longer number", "\n123:456", "\n16"},
		{"line and column read as a clock", "\nmain.go:12:34: err", "\nmain.go:: err"},
		{"ISO date only", "\n2024-01-02 done", "\n done"},
		{"ISO with zone without colon", "\n2024-01-02T10:20+0530|", "\n|"},
		{"ISO with a partial zone", "\n2024-01-02T10:20+05:3x", "\n+05:3x"},
		{"hex id word-bounded", "\n(deadbeef) xdeadbeef deadbeefx", "\n() xdeadbeef deadbeefx"},
		{"hex id length bounds", "\nabc1234 abc123", "\n abc123"},
		{"hex of 65 is kept", "\n" + strings.Repeat("a", 65), "\n" + strings.Repeat("a", 65)},
		{"hex of 64 goes", "\n" + strings.Repeat("a", 64) + ".", "\n."},
		{"digits only are no id", "\n12345678", "\n12345678"},
		{"counters and decimals kept", "\nstep 3 of 10, 0.75 done", "\nstep 3 of 10, 0.75 done"},
		{"earlier alternative wins at an offset", "\n1234567h", "\n"},
		{"a failed number tries its later digits", "\n12345678:30", "\n123456"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := normalizeResult(tc.in); got != tc.want {
				t.Errorf("normalizeResult(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}
