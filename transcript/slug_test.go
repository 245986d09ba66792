package transcript

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestNewSlug(t *testing.T) {
	at := time.Date(2026, 8, 14, 11, 9, 0, 0, time.Local)
	const suffix = "-0814110900-ab1200ff"
	tests := []struct {
		name string
		task string
		base string
	}{
		{"sentence keeps five words", "Add unit tests for the invoice footer!", "add-unit-tests-for-the"},
		{"empty task", "", "task"},
		{"only punctuation", "!!! ???", "task"},
		{"long word is cut to 40", strings.Repeat("a", 50) + " b", strings.Repeat("a", 40)},
		{"cut landing on a hyphen is trimmed", strings.Repeat("a", 39) + " b", strings.Repeat("a", 39)},
		{"non-ASCII letters are dropped", "Füße über Straße", "fe-ber-strae"},
		{"Kelvin sign lowercases to k", "\u212Aelvin scale", "kelvin-scale"},
		{"punctuation inside words is dropped", "Don't use rm -rf!", "dont-use-rm-rf"},
		{"hyphen runs collapse", "a --- b", "a-b"},
		{"only hyphens", "- -- ---", "task"},
		{"leading and trailing hyphens are trimmed", "--leading and trailing--", "leading-and-trailing"},
		{"tabs and newlines separate words", "Fix\tthe\nbug", "fix-the-bug"},
		{"no-break space separates words", "fix\u00a0bug", "fix-bug"},
		{"information separator separates words", "fix\x1cbug", "fix-bug"},
		{"digits are kept", "Bump v2.3 to 10", "bump-v23-to-10"},
		{"five word limit", "one two three four five six seven", "one-two-three-four-five"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewSlug(tt.task, at, bytes.NewReader([]byte{0xab, 0x12, 0x00, 0xff}))
			if err != nil {
				t.Fatalf("NewSlug: %v", err)
			}
			if want := tt.base + suffix; got != want {
				t.Errorf("NewSlug(%q) = %q, want %q", tt.task, got, want)
			}
			if err := ValidSlug(got); err != nil {
				t.Errorf("generated slug fails ValidSlug: %v", err)
			}
		})
	}
}

func TestNewSlugUsesLocalTime(t *testing.T) {
	saved := time.Local
	time.Local = time.FixedZone("UTC+2", 2*60*60)
	t.Cleanup(func() { time.Local = saved })

	got, err := NewSlug("x", time.Date(2026, 8, 14, 23, 9, 5, 0, time.UTC), bytes.NewReader(make([]byte, 4)))
	if err != nil {
		t.Fatalf("NewSlug: %v", err)
	}
	if want := "x-0815010905-00000000"; got != want {
		t.Errorf("NewSlug = %q, want %q", got, want)
	}
}

func TestNewSlugRandomSalt(t *testing.T) {
	shape := regexp.MustCompile(`^task-[0-9]{10}-[0-9a-f]{8}$`)
	first, err := NewSlug("", time.Now(), nil)
	if err != nil {
		t.Fatalf("NewSlug: %v", err)
	}
	second, err := NewSlugNow("")
	if err != nil {
		t.Fatalf("NewSlugNow: %v", err)
	}
	for _, s := range []string{first, second} {
		if !shape.MatchString(s) {
			t.Errorf("slug %q does not look like task-MMDDHHMMSS-<8 hex>", s)
		}
	}
	// 32 random bits: equal salts would mean the salt is not random.
	if first[len(first)-8:] == second[len(second)-8:] {
		t.Errorf("two slugs share the salt: %q and %q", first, second)
	}
}

func TestNewSlugShortRandomness(t *testing.T) {
	if _, err := NewSlug("x", time.Now(), bytes.NewReader([]byte{1, 2})); err == nil {
		t.Fatal("NewSlug succeeded with only 2 random bytes")
	}
}

func TestValidSlug(t *testing.T) {
	valid := []string{"a", "0", "A.b_c-1", "add-unit-tests-0814110900-ab1200ff", "x.."}
	for _, s := range valid {
		if err := ValidSlug(s); err != nil {
			t.Errorf("ValidSlug(%q) = %v, want nil", s, err)
		}
	}
	invalid := []string{"", ".", "..", ".hidden", "-x", "_x", "a/b", "../x", "a b", "é", "a\n", "a\x00"}
	for _, s := range invalid {
		err := ValidSlug(s)
		if !errors.Is(err, ErrInvalidSlug) {
			t.Errorf("ValidSlug(%q) = %v, want ErrInvalidSlug", s, err)
			continue
		}
		if want := "invalid run slug '" + s + "'"; err.Error() != want {
			t.Errorf("ValidSlug(%q) message = %q, want %q", s, err.Error(), want)
		}
	}
}
