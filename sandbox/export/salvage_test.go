package export

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// TestSalvageKeepsWhatCanBeKept: for every stream the export refuses,
// Salvage writes what came before the refused member (and after it), never
// outside the lane, and lists what it left out; only a broken stream ends
// it early, what was written kept.
func TestSalvageKeepsWhatCanBeKept(t *testing.T) {
	for _, tc := range refusalCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			caps := tc.caps
			if caps == (Caps{}) {
				caps = roomy
			}
			l := newLayout(t)
			stream := tc.stream(l)
			before, _ := Validate(bytes.NewReader(stream), caps)
			sum, sv, err := Salvage(bytes.NewReader(stream), l.dest, caps)
			l.assertContained(t)
			// Only the stream's own byte cap does not hold: what is
			// written is bounded, not what is read.
			if err == nil && sv.LeftOutCount == 0 && !errors.Is(tc.kind, ErrTooManyBytes) {
				t.Errorf("nothing left out of a stream the export refuses (%s)", tc.reason(l))
			}
			if sum.Members < before.Members {
				t.Errorf("salvaged %d members, fewer than the %d before the refusal", sum.Members, before.Members)
			}
			for _, name := range before.Files {
				if _, err := os.Lstat(filepath.Join(l.dest, name)); err != nil {
					t.Errorf("%s, before the refused member, was not kept: %v", name, err)
				}
			}
			if len(sv.LeftOut) != min(sv.LeftOutCount, maxListed) {
				t.Errorf("%d listed of %d left out", len(sv.LeftOut), sv.LeftOutCount)
			}
		})
	}
}

// TestSalvageLeavesOutOnlyTheRefused: members past the caps, through a
// link, or of a type the export takes for no file are left out with the
// reason a refusal would give; everything else is written as Extract
// writes it.
func TestSalvageLeavesOutOnlyTheRefused(t *testing.T) {
	stream := buildTar(t,
		file("a", "a"),
		entry{name: "big", body: string(make([]byte, 3000))},
		link("out", "../outside"), file("out/pwned", "x"),
		hardlink("h", "nowhere"),
		file("b", "b"),
		file("c", "c"), file("d", "d"),
	)
	l := newLayout(t)
	sum, sv, err := Salvage(bytes.NewReader(stream), l.dest, Caps{MaxFiles: 4, MaxBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	l.assertContained(t)
	want := []LeftOut{
		{"big", "archive exceeds 1000 bytes at 'big'"},
		{"out/pwned", "'out/pwned' escapes the destination via a symlink created by an earlier member ('out')"},
		{"h", "hard link at 'h' to 'nowhere', which is no earlier file of the archive"},
		{"d", "archive exceeds 4 files at 'd'"},
	}
	if !reflect.DeepEqual(sv.LeftOut, want) || sv.LeftOutCount != 4 {
		t.Errorf("left out %+v (%d)\nwant %+v", sv.LeftOut, sv.LeftOutCount, want)
	}
	if got := describeTree(t, l.dest); !reflect.DeepEqual(got, map[string]string{
		"a": "f 0644 a", "out": "l -> ../outside", "b": "f 0644 b", "c": "f 0644 c",
	}) {
		t.Errorf("tree %q", got)
	}
	if !slices.Equal(sum.Files, []string{"a", "out", "b", "c"}) || sum.Bytes != 3 {
		t.Errorf("summary %+v", sum)
	}
	// A lane holding anything but its .git file is refused, as Extract
	// refuses it.
	if _, _, err := Salvage(bytes.NewReader(stream), l.dest, roomy); err == nil {
		t.Error("Salvage wrote into a lane that holds files")
	}
}
