package docker

import (
	"slices"
	"strings"
	"testing"
)

func TestParseMountsUnder(t *testing.T) {
	const mountinfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
100 22 0:5 / /tmp/dirtywork-base-1 rw - tmpfs tmpfs rw
101 100 0:6 / /tmp/dirtywork-base-1/rootfs/proc rw - proc proc rw
102 100 0:7 / /tmp/dirtywork-base-1/rootfs/dev\040pts rw - devpts devpts rw
103 22 0:8 / /tmp/dirtywork-base-10/rootfs/proc rw - proc proc rw
`
	got, err := parseMountsUnder(strings.NewReader(mountinfo), "/tmp/dirtywork-base-1/")
	if err != nil {
		t.Fatal(err)
	}
	// Strictly inside: not the directory itself, not a sibling sharing its
	// prefix; escaped spaces decoded.
	want := []string{"/tmp/dirtywork-base-1/rootfs/proc", "/tmp/dirtywork-base-1/rootfs/dev pts"}
	if !slices.Equal(got, want) {
		t.Errorf("mounts = %q, want %q", got, want)
	}
}

// The real mount table is read: / has at least /proc mounted inside it.
func TestMountsUnderReadsTheMountTable(t *testing.T) {
	got, err := mountsUnder("/")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, "/proc") {
		t.Errorf("mounts under / = %q, want /proc among them", got)
	}
	none, err := mountsUnder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(none) != 0 {
		t.Errorf("a fresh directory has mounts inside: %q", none)
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{
		`/a\040b`:   "/a b",
		`/tab\011x`: "/tab\tx",
		`/back\134`: `/back\`,
		`/plain`:    "/plain",
		`/short\04`: `/short\04`,
	} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}
