package toolbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/seal"
)

// The seal and verify requests, end to end through the protocol: a seal
// that finds a repository changes nothing until told to drop it; verify
// runs in its own session, what it makes is taken out and what it
// changes of the sealed tree is reported; the tree it judged is named.
func TestSealAndVerifyRequests(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			dir := t.TempDir()
			c := tr.start(t, dir)
			mustBash(t, c, "echo one > app.txt && printf 'build/\\n' > .gitignore")
			since, err := c.Mark(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			mustBash(t, c, "mkdir -p build repo/objects repo/refs && echo x > build/out && echo ref > repo/HEAD")
			b := seal.Baseline{Since: since, Tracked: map[string]uint32{"app.txt": 0o100644, ".gitignore": 0o100644}}
			reply, err := c.Seal(t.Context(), SealRequest{Baseline: b})
			if err != nil {
				t.Fatal(err)
			}
			if !reply.Pending || reply.Hash != "" || !slices.Equal(reply.Report.Repositories, []string{"repo"}) {
				t.Fatalf("first seal %+v: want it pending on repo", reply)
			}
			if _, err := os.Stat(filepath.Join(dir, "build", "out")); err != nil {
				t.Fatalf("a pending seal changed the tree: %v", err)
			}
			reply, err = c.Seal(t.Context(), SealRequest{Baseline: b, Drop: true})
			if err != nil {
				t.Fatal(err)
			}
			if reply.Pending || !strings.HasPrefix(reply.Hash, "sha256:") || len(reply.Report.Ignored) != 1 || reply.Report.Ignored[0].Path != "build/" {
				t.Fatalf("second seal %+v", reply)
			}
			for _, gone := range []string{"build", "repo"} {
				if _, err := os.Lstat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
					t.Errorf("%s is still in the tree: %v", gone, err)
				}
			}
			session := filepath.Join(t.TempDir(), "verify")
			v, err := c.Verify(t.Context(), VerifyRequest{
				Command: `test "$HOME" = "` + session + `/home" && test -d "$TMPDIR" && echo cache > made.txt && echo two > app.txt`,
				Timeout: 20 * time.Second, Dir: session, Setup: "true",
			})
			if err != nil {
				t.Fatal(err)
			}
			if v.ExitCode != 0 || v.Hash != reply.Hash || !slices.Equal(v.Changed, []string{"app.txt"}) || !slices.Equal(v.Removed, []string{"made.txt"}) {
				t.Fatalf("verify %+v: want exit 0, the sealed tree named, app.txt changed and made.txt taken out", v)
			}
			if _, err := os.Lstat(filepath.Join(dir, "made.txt")); !os.IsNotExist(err) {
				t.Errorf("what verify made is still there: %v", err)
			}
		})
	}
}

// Verify refuses a tree that was never sealed.
func TestVerifyNeedsASealedTree(t *testing.T) {
	c := transports[0].start(t, t.TempDir())
	_, err := c.Verify(t.Context(), VerifyRequest{Command: "true", Timeout: time.Second, Dir: filepath.Join(t.TempDir(), "v")})
	var re *RemoteError
	if !errors.As(err, &re) || !strings.Contains(re.Message, "not sealed") {
		t.Fatalf("verify before a seal: %v", err)
	}
}
