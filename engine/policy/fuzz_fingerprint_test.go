package policy

import (
	"crypto/sha256"
	"regexp"
	"strings"
	"testing"
)

// The reference normalizer applies each alternative of the volatile-token
// expression as its own anchored RE2 expression at every offset, in order,
// and checks the hex branch's look-ahead (a letter in the run) on the
// match. It is quadratic and slow, and shares no code with the scanner it
// checks.
var (
	refDuration = regexp.MustCompile(`^\d+(?:\.\d+)?` + spaceClass +
		`?(?:ms|s|secs?|seconds?|min|mins?|minutes?|h|hours?)\b`)
	refClock = regexp.MustCompile(`^\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?`)
	refISO   = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}` +
		`(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?`)
	refHex  = regexp.MustCompile(`^[0-9a-f]{7,64}\b`)
	refWord = regexp.MustCompile(`^\w`)
)

func referenceNormalize(result string) string {
	head, body, found := strings.Cut(result, "\n")
	if !found {
		return result
	}
	var b strings.Builder
	b.WriteString(head + "\n")
	for i := 0; i < len(body); {
		rest := body[i:]
		n := 0
		for _, re := range []*regexp.Regexp{refDuration, refClock, refISO} {
			if m := re.FindString(rest); m != "" {
				n = len(m)
				break
			}
		}
		if n == 0 && (i == 0 || !refWord.MatchString(body[i-1:])) {
			if m := refHex.FindString(rest); strings.ContainsAny(m, "abcdef") {
				n = len(m)
			}
		}
		if n > 0 {
			i += n
			continue
		}
		b.WriteByte(body[i])
		i++
	}
	return b.String()
}

func FuzzFingerprint(f *testing.F) {
	for _, seed := range []struct{ command, result string }{
		{"pytest", "exit code: 1\n5 passed, 1 failed in 24.51s"},
		{"x", "exit code: 0 12:30\n[2024-01-02T10:20:30.5+05:30] 1a2b3c4 took 12 ms"},
		{"x", "\n12345678:30 1234567h 5 secs deadbeefx 3.14159"},
		{"", "ERROR: command timed out after 5s — it did not finish"},
		{"go vet", "exit code: 1\nmain.go:12:34: x\n" + strings.Repeat("ab", 40)},
	} {
		f.Add(seed.command, seed.result)
	}
	f.Fuzz(func(t *testing.T, command, result string) {
		got := normalizeResult(result)
		if want := referenceNormalize(result); got != want {
			t.Fatalf("normalizeResult(%q) = %q; the reference gives %q", result, got, want)
		}
		head, _, found := strings.Cut(result, "\n")
		if found && !strings.HasPrefix(got, head+"\n") {
			t.Fatalf("normalizeResult(%q) = %q lost the first line", result, got)
		}
		if sum := Fingerprint(command, result); sum != sha256.Sum256([]byte(command+"\x00"+got)) {
			t.Fatalf("Fingerprint(%q, %q) is not SHA-256 of command, NUL, normalized result", command, result)
		}
	})
}
