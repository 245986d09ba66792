package export

import (
	"archive/tar"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

func hardlink(name, target string) entry { return entry{name: name, typ: tar.TypeLink, link: target} }

// TestHardLinksShareTheirFilesFate: a hard link gets the fate of the
// member whose file it shares. A link to a FIFO or device is left out and
// listed with it, never a refusal; a link to a file of a repository is
// named by LinksInto, so it leaves the lane with the repository; a config
// reached through a hard link is judged by its file's text, or, when that
// text was never judged, taken for a sign.
func TestHardLinksShareTheirFilesFate(t *testing.T) {
	repo := []entry{
		dirEntry("repo/"), file("repo/HEAD", "ref: refs/heads/main\n"), dirEntry("repo/objects/"), dirEntry("repo/refs/"),
		file("repo/config", "[core]\n\tfsmonitor = touch /tmp/pwned\n"),
	}
	cases := []struct {
		name    string
		archive []entry
		// tree is what the lane holds afterwards, in describeTree's terms.
		tree    map[string]string
		skipped []string
		members int64
		repos   []string
		into    []string // LinksInto(repos)
	}{
		{
			name:    "link to a FIFO",
			archive: []entry{file("a", "a"), special("p", tar.TypeFifo), hardlink("h", "p"), hardlink("h2", "h"), file("b", "b")},
			tree:    map[string]string{"a": "f 0644 a", "b": "f 0644 b"},
			skipped: []string{"p", "h", "h2"},
			members: 2,
		},
		{
			name:    "link to devices",
			archive: []entry{dirEntry("dev/"), special("dev/null", tar.TypeChar), special("dev/sda", tar.TypeBlock), hardlink("null", "dev/null"), hardlink("dev/disk", "dev/sda")},
			tree:    map[string]string{"dev": "d 0755"},
			skipped: []string{"dev/null", "dev/sda", "null", "dev/disk"},
			members: 1,
		},
		{
			name: "links to a repository's files",
			archive: append(slices.Clone(repo), file("outside", "o"),
				hardlink("z", "repo/config"), hardlink("y", "z"), hardlink("repo/o2", "outside"), hardlink("repo/refs/h", "repo/HEAD")),
			tree: map[string]string{
				"repo": "d 0755", "repo/HEAD": "f 0644 ref: refs/heads/main\n", "repo/objects": "d 0755", "repo/refs": "d 0755",
				"repo/config": "f 0644 [core]\n\tfsmonitor = touch /tmp/pwned\n", "outside": "f 0644 o",
				"z": "f 0644 [core]\n\tfsmonitor = touch /tmp/pwned\n", "y": "f 0644 [core]\n\tfsmonitor = touch /tmp/pwned\n",
				"repo/o2": "f 0644 o", "repo/refs/h": "f 0644 ref: refs/heads/main\n",
			},
			members: 10,
			repos:   []string{"repo"},
			into:    []string{"z", "y"},
		},
		{
			name: "a config through a hard link",
			archive: []entry{
				file("text", "[core]\n\tbare = false\n"), dirEntry("c1/"), hardlink("c1/config", "text"),
				dirEntry("c2/"), file("c2/config", "[core]\n\tfilemode = true\n"), dirEntry("c3/"), hardlink("c3/CONFIG", "c2/config"),
				dirEntry("c4/"), file("c4/config", "[include]\n\tpath = x\n"), dirEntry("c5/"), hardlink("c5/config", "c4/config"),
			},
			tree: map[string]string{
				"text": "f 0644 [core]\n\tbare = false\n", "c1": "d 0755", "c1/config": "f 0644 [core]\n\tbare = false\n",
				"c2": "d 0755", "c2/config": "f 0644 [core]\n\tfilemode = true\n", "c3": "d 0755", "c3/CONFIG": "f 0644 [core]\n\tfilemode = true\n",
				"c4": "d 0755", "c4/config": "f 0644 [include]\n\tpath = x\n", "c5": "d 0755", "c5/config": "f 0644 [include]\n\tpath = x\n",
			},
			members: 11,
			repos:   []string{"c1", "c4", "c5"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, sum, _ := exportBoth(t, treeSpec{"a": {body: "old"}}, buildTar(t, tc.archive...))
			if got := describeTree(t, l.dest); !reflect.DeepEqual(got, tc.tree) {
				t.Errorf("tree %q\nwant %q", got, tc.tree)
			}
			if !slices.Equal(sum.SkippedSpecial, tc.skipped) || sum.Members != tc.members {
				t.Errorf("skipped %q, members %d; want %q, %d", sum.SkippedSpecial, sum.Members, tc.skipped, tc.members)
			}
			if !slices.Equal(sum.Repositories, tc.repos) {
				t.Errorf("repositories %q, want %q", sum.Repositories, tc.repos)
			}
			if got := sum.LinksInto(sum.Repositories); !slices.Equal(got, tc.into) {
				t.Errorf("links into the repositories %q, want %q", got, tc.into)
			}
			// What leaves the lane with the repositories leaves nothing
			// of theirs behind.
			q := filepath.Join(t.TempDir(), "q")
			moved, err := Quarantine(l.dest, sum.Repositories, q)
			if err != nil || !slices.Equal(moved, tc.repos) {
				t.Fatalf("quarantine: %q, %v", moved, err)
			}
			links, err := QuarantineEntries(l.dest, sum.LinksInto(moved), q)
			if err != nil || !slices.Equal(links, tc.into) {
				t.Fatalf("quarantine the links: %q, %v", links, err)
			}
			for _, p := range links {
				if _, err := os.Lstat(filepath.Join(l.dest, p)); !os.IsNotExist(err) {
					t.Errorf("%s is still in the lane: %v", p, err)
				}
				if _, err := os.Lstat(filepath.Join(q, p)); err != nil {
					t.Errorf("%s is not in the quarantine: %v", p, err)
				}
			}
		})
	}
}
