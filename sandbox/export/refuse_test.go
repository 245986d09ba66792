package export

import (
	"archive/tar"
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

var roomy = Caps{MaxFiles: 100, MaxBytes: 1 << 20}

// withPre puts a directory and a file before es, so every refusal is
// seen to clear what the stream had already written.
func withPre(es ...entry) []entry {
	return append([]entry{dirEntry("pre/"), file("pre/ok.txt", "ok")}, es...)
}

func globalHeader() entry {
	return entry{name: "pax_global_header", typ: tar.TypeXGlobalHeader, pax: map[string]string{"comment": "c"}}
}

// withoutTrailer drops the end-of-archive marker, so more can follow.
func withoutTrailer(b []byte) []byte { return b[:len(b)-1024] }

type refusalCase struct {
	name   string
	caps   Caps // roomy when zero
	stream func(l layout) []byte
	kind   error
	reason func(l layout) string
}

func refusalCases(t testing.TB) []refusalCase {
	es := func(es ...entry) func(layout) []byte {
		return func(layout) []byte { return buildTar(t, es...) }
	}
	text := func(s string) func(layout) string { return func(layout) string { return s } }
	return []refusalCase{
		{
			name:   "symlink out then a file through it",
			stream: es(withPre(link("out", "../outside"), file("out/pwned", "x"))...),
			kind:   ErrThroughSymlink,
			reason: text("'out/pwned' escapes the destination via a symlink created by an earlier member ('out')"),
		},
		{
			name: "absolute symlink then a directory through it",
			stream: func(l layout) []byte {
				return buildTar(t, withPre(link("abs", l.outside), dirEntry("abs/sub/"))...)
			},
			kind:   ErrThroughSymlink,
			reason: text("'abs/sub/' escapes the destination via a symlink created by an earlier member ('abs')"),
		},
		{
			name:   "nested symlink then a deep file through it",
			stream: es(withPre(dirEntry("d/"), link("d/l", "../../outside"), file("d/l/x/y", "x"))...),
			kind:   ErrThroughSymlink,
			reason: text("'d/l/x/y' escapes the destination via a symlink created by an earlier member ('d/l')"),
		},
		{
			name:   "symlink then a symlink through it",
			stream: es(withPre(link("out", "../outside"), link("out/l", "x"))...),
			kind:   ErrThroughSymlink,
			reason: text("'out/l' escapes the destination via a symlink created by an earlier member ('out')"),
		},
		{
			name:   "internal symlink then a file through it",
			stream: es(withPre(link("in", "pre"), file("in/x", "x"))...),
			kind:   ErrThroughSymlink,
			reason: text("'in/x' escapes the destination via a symlink created by an earlier member ('in')"),
		},
		{
			name:   "dot-dot",
			stream: es(withPre(file("../x", "x"))...),
			kind:   ErrInvalidComponent,
			reason: text("invalid path component at '../x'"),
		},
		{
			name:   "dot-dot inside",
			stream: es(withPre(file("a/../../x", "x"))...),
			kind:   ErrInvalidComponent,
			reason: text("invalid path component at 'a/../../x'"),
		},
		{
			name:   "dot component",
			stream: es(withPre(file("./x", "x"))...),
			kind:   ErrInvalidComponent,
			reason: text("invalid path component at './x'"),
		},
		{
			name:   "empty component",
			stream: es(withPre(file("a//x", "x"))...),
			kind:   ErrInvalidComponent,
			reason: text("invalid path component at 'a//x'"),
		},
		{
			name:   "component longer than a file name",
			stream: es(withPre(file("a/"+strings.Repeat("n", 256), "x"))...),
			kind:   ErrInvalidComponent,
			reason: text("invalid path component at 'a/" + strings.Repeat("n", 254) + "…'"),
		},
		{
			name: "absolute path",
			stream: func(l layout) []byte {
				return buildTar(t, withPre(file(l.outside+"/x", "x"))...)
			},
			kind:   ErrAbsolutePath,
			reason: func(l layout) string { return "absolute path at '" + l.outside + "/x'" },
		},
		{
			name:   "hardlink to nothing exported",
			stream: es(withPre(entry{name: "h", typ: tar.TypeLink, link: "pre/missing.txt"})...),
			kind:   ErrDisallowedType,
			reason: text("hard link at 'h' to 'pre/missing.txt', which is no earlier file of the archive"),
		},
		{
			name:   "hardlink to a directory",
			stream: es(withPre(entry{name: "h", typ: tar.TypeLink, link: "pre"})...),
			kind:   ErrDisallowedType,
			reason: text("hard link at 'h' to 'pre', which is no earlier file of the archive"),
		},
		{
			name:   "hardlink to a symlink",
			stream: es(withPre(link("sl", "pre/ok.txt"), entry{name: "h", typ: tar.TypeLink, link: "sl"})...),
			kind:   ErrDisallowedType,
			reason: text("hard link at 'h' to 'sl', which is no earlier file of the archive"),
		},
		{
			name:   "hardlink out of the tree",
			stream: es(withPre(entry{name: "h", typ: tar.TypeLink, link: "../outside/x"})...),
			kind:   ErrDisallowedType,
			reason: text("hard link at 'h' to an invalid name"),
		},
		{
			name:   ".git/config",
			stream: es(withPre(file(".git/config", "[core]\n"))...),
			kind:   ErrGitEntry,
			reason: text(".git-named entry at '.git/config'"),
		},
		{
			name:   "sub/.GIT/x",
			stream: es(withPre(dirEntry("sub/"), file("sub/.GIT/x", "x"))...),
			kind:   ErrGitEntry,
			reason: text(".git-named entry at 'sub/.GIT/x'"),
		},
		{
			name:   ".git as a directory",
			stream: es(withPre(dirEntry(".git/"))...),
			kind:   ErrGitEntry,
			reason: text(".git-named entry at '.git/'"),
		},
		{
			name:   ".Git as a symlink",
			stream: es(withPre(link("pre/.Git", "/etc"))...),
			kind:   ErrGitEntry,
			reason: text(".git-named entry at 'pre/.Git'"),
		},
		{
			name:   "empty symlink target",
			stream: es(withPre(link("e", ""))...),
			kind:   ErrInvalidTarget,
			reason: text("invalid symlink target at 'e'"),
		},
		{
			name:   "too many files",
			caps:   Caps{MaxFiles: 4, MaxBytes: 1 << 20},
			stream: es(withPre(file("a", "a"), file("b", "b"), file("c", "c"))...),
			kind:   ErrTooManyFiles,
			reason: text("archive exceeds 4 files at 'c'"),
		},
		{
			// The stream stops after the header: only the declared size
			// can trip the cap.
			name:   "too many bytes by one declared size",
			caps:   Caps{MaxFiles: 100, MaxBytes: 4096},
			stream: es(withPre(entry{name: "big", size: 1 << 20, cut: true})...),
			kind:   ErrTooManyBytes,
			reason: text("archive exceeds 4096 bytes at 'big'"),
		},
		{
			// 'b' alone fits; with 'a' and 'pre/ok.txt' it does not.
			name:   "too many bytes by summed declared sizes",
			caps:   Caps{MaxFiles: 100, MaxBytes: 4000},
			stream: es(withPre(file("a", strings.Repeat("a", 1000)), entry{name: "b", size: 3001, cut: true})...),
			kind:   ErrTooManyBytes,
			reason: text("archive exceeds 4000 bytes at 'b'"),
		},
		{
			name: "too many stream bytes in a huge PAX record",
			caps: Caps{MaxFiles: 100, MaxBytes: 64 << 10},
			stream: es(withPre(entry{name: "p", body: "x", pax: map[string]string{
				"comment": strings.Repeat("x", 200<<10),
			}})...),
			kind:   ErrTooManyBytes,
			reason: text("archive exceeds 65536 bytes after 'pre/ok.txt'"),
		},
		{
			name: "too many stream bytes in the first header",
			caps: Caps{MaxFiles: 100, MaxBytes: 64 << 10},
			stream: es(entry{name: "p", body: "x", pax: map[string]string{
				"comment": strings.Repeat("x", 200<<10),
			}}),
			kind:   ErrTooManyBytes,
			reason: text("archive exceeds 65536 bytes at the start of the archive"),
		},
		{
			// Headers so far: 3 × 512, ok.txt's block 512; f declares
			// 1000 ≤ 2560 but its data crosses the cap.
			name:   "too many stream bytes in a member's data",
			caps:   Caps{MaxFiles: 100, MaxBytes: 2560},
			stream: es(withPre(file("f", strings.Repeat("f", 1000)))...),
			kind:   ErrTooManyBytes,
			reason: text("archive exceeds 2560 bytes at 'f'"),
		},
		{
			// 3 headers, 2 data blocks, then the 1024-byte trailer.
			name:   "too many stream bytes in the trailer",
			caps:   Caps{MaxFiles: 100, MaxBytes: 3583},
			stream: es(withPre(file("f", strings.Repeat("f", 512)))...),
			kind:   ErrTooManyBytes,
			reason: text("archive exceeds 3583 bytes after 'f'"),
		},
		{
			name:   "PAX global header first",
			stream: es(append([]entry{globalHeader()}, withPre()...)...),
			kind:   ErrGlobalHeader,
			reason: text("archive contains a PAX global header at the start of the archive"),
		},
		{
			name:   "PAX global header last",
			stream: es(withPre(file("a", "a"), globalHeader())...),
			kind:   ErrGlobalHeader,
			reason: text("archive contains a PAX global header after 'a'"),
		},
		{
			name:   "duplicate file",
			stream: es(withPre(file("a", "1"), file("a", "2"))...),
			kind:   ErrExtraction,
			reason: text("export extraction failed: duplicate member 'a'"),
		},
		{
			name:   "file over a directory",
			stream: es(withPre(dirEntry("d/"), file("d", "x"))...),
			kind:   ErrExtraction,
			reason: text("export extraction failed: duplicate member 'd'"),
		},
		{
			name:   "directory over a file",
			stream: es(withPre(file("f", "x"), dirEntry("f/"))...),
			kind:   ErrExtraction,
			reason: text("export extraction failed: duplicate member 'f/'"),
		},
		{
			name:   "file over a symlink out",
			stream: es(withPre(link("l", "../outside/x"), file("l", "x"))...),
			kind:   ErrExtraction,
			reason: text("export extraction failed: duplicate member 'l'"),
		},
		{
			name:   "file under a file",
			stream: es(withPre(file("f", "x"), file("f/g", "y"))...),
			kind:   ErrExtraction,
			reason: text("export extraction failed: 'f/g' lies under 'f', which an earlier member made a file"),
		},
		{
			name:   "stream cut inside a member's data",
			stream: es(withPre(entry{name: "t", size: 100, cut: true})...),
			kind:   ErrExtraction,
			reason: text("export extraction failed: read 't': unexpected EOF"),
		},
		{
			name: "garbage header",
			stream: func(layout) []byte {
				junk := bytes.Repeat([]byte{'j'}, 512)
				return append(withoutTrailer(buildTar(t, withPre()...)), junk...)
			},
			kind:   ErrExtraction,
			reason: text("export extraction failed: read archive header after 'pre/ok.txt': archive/tar: invalid tar header"),
		},
	}
}

// TestRefusals feeds each hostile stream to Validate and to Extract: both
// must refuse it with the same stable text, Extract must leave the
// worktree holding only .git, and nothing may appear beside it.
func TestRefusals(t *testing.T) {
	for _, tc := range refusalCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			caps := tc.caps
			if caps == (Caps{}) {
				caps = roomy
			}
			l := newLayout(t)
			stream := tc.stream(l)
			want := tc.reason(l)

			vsum, verr := Validate(bytes.NewReader(stream), caps)
			checkRefusal(t, "Validate", verr, tc.kind, want)

			xsum, xerr := Extract(bytes.NewReader(stream), l.dest, caps)
			checkRefusal(t, "Extract", xerr, tc.kind, want)
			if !reflect.DeepEqual(vsum, xsum) {
				t.Errorf("summaries differ: Validate %+v, Extract %+v", vsum, xsum)
			}
			l.assertOnlyGit(t)
			l.assertContained(t)
		})
	}
}

func checkRefusal(t *testing.T, who string, err error, kind error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s accepted the stream, want %q", who, want)
	}
	ref := asRefusal(t, err)
	if ref.Reason != want || err.Error() != want {
		t.Errorf("%s refused with %q, want %q", who, err.Error(), want)
	}
	if !errors.Is(err, kind) {
		t.Errorf("%s: errors.Is(%q, %v) = false", who, err, kind)
	}
}

// TestRefusalKeepsPartialSummary shows a refusal reports the members
// accepted before it, which Extract had written and then cleared.
func TestRefusalKeepsPartialSummary(t *testing.T) {
	l := newLayout(t)
	stream := buildTar(t, withPre(file("a", "abc"), file("a", "again"))...)
	sum, err := Extract(bytes.NewReader(stream), l.dest, roomy)
	if !errors.Is(err, ErrExtraction) {
		t.Fatalf("err = %v, want a duplicate refusal", err)
	}
	want := Summary{Members: 3, Bytes: 5, Files: []string{"pre/ok.txt", "a"}}
	if !reflect.DeepEqual(sum, want) {
		t.Errorf("summary = %+v, want %+v", sum, want)
	}
	if ref := asRefusal(t, err); ref.Member != "a" {
		t.Errorf("Member = %q, want a", ref.Member)
	}
	l.assertOnlyGit(t)
}

// TestStreamEndingAtTheCapIsAccepted pins the byte cap as inclusive: the
// trailer case above refuses one byte less.
func TestStreamEndingAtTheCapIsAccepted(t *testing.T) {
	stream := buildTar(t, withPre(file("f", strings.Repeat("f", 512)))...)
	if len(stream) != 3584 {
		t.Fatalf("stream is %d bytes, the case assumes 3584", len(stream))
	}
	if _, err := Validate(bytes.NewReader(stream), Caps{MaxFiles: 3, MaxBytes: 3584}); err != nil {
		t.Fatalf("Validate at exactly the caps: %v", err)
	}
}

// TestZeroCapsRefuse pins that a zero cap is a cap, not "unlimited".
func TestZeroCapsRefuse(t *testing.T) {
	stream := buildTar(t, file("a", "a"))
	if _, err := Validate(bytes.NewReader(stream), Caps{MaxFiles: 1}); !errors.Is(err, ErrTooManyBytes) {
		t.Errorf("MaxBytes 0: err = %v, want ErrTooManyBytes", err)
	}
	if _, err := Validate(bytes.NewReader(stream), Caps{MaxBytes: 1 << 20}); !errors.Is(err, ErrTooManyFiles) {
		t.Errorf("MaxFiles 0: err = %v, want ErrTooManyFiles", err)
	}
}

// TestInsecurePathSettingKeepsOurMessages checks that with archive/tar's
// own path check switched on, which makes Next report names it dislikes
// as errors, such names are still refused with our texts, and the rest
// of an archive still passes.
func TestInsecurePathSettingKeepsOurMessages(t *testing.T) {
	t.Setenv("GODEBUG", "tarinsecurepath=0")
	for _, tc := range []struct {
		name string
		kind error
		want string
	}{
		{"../x", ErrInvalidComponent, "invalid path component at '../x'"},
		{"/abs/x", ErrAbsolutePath, "absolute path at '/abs/x'"},
	} {
		_, err := Validate(bytes.NewReader(buildTar(t, withPre(file(tc.name, "x"))...)), roomy)
		checkRefusal(t, "Validate", err, tc.kind, tc.want)
	}
	if _, err := Validate(bytes.NewReader(buildTar(t, happyEntries()...)), roomy); err != nil {
		t.Errorf("Validate of a sound archive: %v", err)
	}
}
