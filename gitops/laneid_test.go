package gitops

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEncodeLaneID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id, want string
	}{
		{"add-tests-1130073812-ab12cd34", "add-tests-1130073812-ab12cd34"}, // run slugs keep their names
		{"task", "task"},
		{"RUN/TASK", "_52_55_4e_2f_54_41_53_4b"},
		{"run-7/task-3", "run-7_2ftask-3"},
		{"a_b", "a_5fb"},
		{"_5f", "_5f5f"},
		{"a.lock", "a_2elock"},
		{"..", "_2e_2e"},
		{"@{x}", "_40_7bx_7d"},
		{"x y", "x_20y"},
		{"é", "_c3_a9"},
		{"-", "-"},
		{strings.Repeat("a", MaxEncodedLaneID), strings.Repeat("a", MaxEncodedLaneID)},
	}
	for _, tt := range tests {
		got, err := EncodeLaneID(tt.id)
		if err != nil || got != tt.want {
			t.Errorf("EncodeLaneID(%q) = %q, %v; want %q", tt.id, got, err, tt.want)
			continue
		}
		back, err := DecodeLaneID(got)
		if err != nil || back != tt.id {
			t.Errorf("DecodeLaneID(%q) = %q, %v; want %q", got, back, err, tt.id)
		}
	}
}

func TestEncodeLaneIDRefusals(t *testing.T) {
	t.Parallel()
	for _, id := range []string{
		"",
		"a\nb",
		"tab\there",
		"nul\x00",
		"del\x7f",
		"c1\u0085",
		"zero\u200bwidth",
		"bad\xffutf8",
		strings.Repeat("a", MaxEncodedLaneID+1),
		strings.Repeat("A", MaxEncodedLaneID/3+1), // 3 bytes each once encoded
	} {
		if enc, err := EncodeLaneID(id); !errors.Is(err, ErrInvalidLaneID) {
			t.Errorf("EncodeLaneID(%q) = %q, %v; want ErrInvalidLaneID", id, enc, err)
		}
	}
}

func TestDecodeLaneIDRefusesNonEncodings(t *testing.T) {
	t.Parallel()
	for _, enc := range []string{
		"",
		"A",       // upper case never appears
		"a/b",     // nor does '/'
		"_",       // truncated escape
		"_4",      // truncated escape
		"_4A",     // upper-case hex
		"_4g",     // not hex
		"_61",     // 'a' is never escaped
		"_2d",     // nor is '-'
		"_0a",     // decodes to a control character
		"_ff",     // decodes to invalid UTF-8
		"_c3",     // truncated UTF-8 sequence
		"x_20y_z", // stray '_'
		strings.Repeat("a", MaxEncodedLaneID+1),
	} {
		if id, err := DecodeLaneID(enc); !errors.Is(err, ErrInvalidLaneID) {
			t.Errorf("DecodeLaneID(%q) = %q, %v; want ErrInvalidLaneID", enc, id, err)
		}
	}
}

// laneIDSamples are ids for the git cross-check: the table's plus random
// printable strings from a fixed seed.
func laneIDSamples() []string {
	ids := []string{"RUN/TASK", "a.lock", "..", "@", "@{u}", "x y", "-lead", "trail.", "a//b", "é/ü", "back\\slash", "q?*[", "~^:"}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("aZ09-_./@{}~^:?*[\\ é中😀")
	for range 40 {
		var b strings.Builder
		for range 1 + r.IntN(20) {
			b.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		ids = append(ids, b.String())
	}
	return ids
}

// TestLaneNamesAreValidRefsAccordingToGit asks git itself.
func TestLaneNamesAreValidRefsAccordingToGit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, id := range laneIDSamples() {
		enc, err := EncodeLaneID(id)
		if err != nil {
			t.Fatalf("EncodeLaneID(%q): %v", id, err)
		}
		branch := LaneBranch(enc)
		got, err := gitE(dir, "check-ref-format", "--branch", branch)
		if err != nil || got != branch {
			t.Errorf("git check-ref-format --branch %q = %q, %v", branch, got, err)
		}
		if !validRefName("refs/heads/" + branch) {
			t.Errorf("validRefName disagrees with git on %q", branch)
		}
	}
}

var encodedForm = regexp.MustCompile(`^[a-z0-9_-]+$`)

func FuzzLaneID(f *testing.F) {
	for _, id := range laneIDSamples() {
		f.Add(id)
	}
	f.Add("")
	f.Add("\x00")
	f.Fuzz(func(t *testing.T, id string) {
		enc, err := EncodeLaneID(id)
		if err != nil {
			if !errors.Is(err, ErrInvalidLaneID) {
				t.Fatalf("error %v does not match ErrInvalidLaneID", err)
			}
			if validateLaneID(id) == nil && len(id) <= MaxEncodedLaneID/3 {
				t.Fatalf("short valid id %q refused: %v", id, err)
			}
			return
		}
		if !utf8.ValidString(id) || id == "" {
			t.Fatalf("invalid id %q accepted", id)
		}
		back, err := DecodeLaneID(enc)
		if err != nil || back != id {
			t.Fatalf("DecodeLaneID(EncodeLaneID(%q) = %q) = %q, %v", id, enc, back, err)
		}
		if len(enc) > MaxEncodedLaneID || !encodedForm.MatchString(enc) {
			t.Fatalf("encoding %q of %q is not a short lowercase name", enc, id)
		}
		if !validRefName("refs/heads/" + LaneBranch(enc)) {
			t.Fatalf("branch %q is not a valid ref name", LaneBranch(enc))
		}
		if name := LaneWorktreeName(enc); strings.ContainsAny(name, "/\x00") || name == "." || name == ".." || len(name) > 255 {
			t.Fatalf("worktree name %q is not a path component", name)
		}
	})
}

func FuzzLaneIDDistinct(f *testing.F) {
	f.Add("a", "A")
	f.Add("a_", "a_5f")
	f.Add("RUN/TASK", "run/task")
	f.Fuzz(func(t *testing.T, a, b string) {
		ea, errA := EncodeLaneID(a)
		eb, errB := EncodeLaneID(b)
		if errA != nil || errB != nil || a == b {
			return
		}
		if strings.EqualFold(ea, eb) {
			t.Fatalf("ids %q and %q share the name %q/%q (case-insensitively)", a, b, ea, eb)
		}
	})
}

// validRefName implements git's check-ref-format rules (see
// git-check-ref-format(1)) for the fuzz test; the sample test checks it
// against git itself.
func validRefName(name string) bool {
	if name == "@" || strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") ||
		strings.Contains(name, "..") || strings.Contains(name, "@{") || strings.Contains(name, "//") {
		return false
	}
	for _, c := range []byte(name) {
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return false
		}
	}
	for _, comp := range strings.Split(name, "/") {
		if comp == "" || strings.HasPrefix(comp, ".") || strings.HasSuffix(comp, ".lock") {
			return false
		}
	}
	return true
}
