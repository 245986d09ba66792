package tui

import (
	"slices"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/tui/backend"
)

// pycPatch changes a source file and leaves a compiled file beside it.
const pycPatch = `diff --git a/shop/cart.py b/shop/cart.py
--- a/shop/cart.py
+++ b/shop/cart.py
@@ -1 +1 @@
-def total(xs): return sum(xs[:-1])
+def total(xs): return sum(xs)
diff --git a/shop/__pycache__/cart.cpython-311.pyc b/shop/__pycache__/cart.cpython-311.pyc
new file mode 100644
Binary files /dev/null and b/shop/__pycache__/cart.cpython-311.pyc differ
`

// Build and generated files start left out of the accept and say so; an
// accept and a merge take the rest only (the merge accepts them first).
func TestGeneratedFilesAreLeftOutOfAccept(t *testing.T) {
	for _, action := range []string{"accept", "merge"} {
		t.Run(action, func(t *testing.T) {
			h := newSample(t, 160, 40)
			h.store.SetReview("rename-api-0103", backend.Review{Patch: pycPatch, MergeReady: true, MergeInto: "main"})
			h.openReview("rename-api-0103")
			h.until("the forecast", func() bool { return !strings.Contains(h.screen(), "merge forecast…") })
			screen := h.screen()
			if !strings.Contains(screen, "1 in the accept (1 generated left out)") || !strings.Contains(screen, "generated") {
				t.Fatalf("the generated file is not shown as left out:\n%s", screen)
			}
			switch action {
			case "accept":
				h.key("a")
			case "merge":
				h.key("m")
				if !strings.Contains(h.screen(), "1 of 2 files (the rest left out)") {
					t.Fatalf("the merge question does not say what it takes:\n%s", h.screen())
				}
				h.key("y")
			}
			var accepts []string
			for _, c := range h.store.Calls() {
				if c.Method == "Accept" {
					accepts = append(accepts, strings.Join(c.Files, ","))
				}
			}
			if !slices.Equal(accepts, []string{"shop/cart.py"}) {
				t.Fatalf("accepted %q, want only shop/cart.py", accepts)
			}
			if action == "merge" {
				lastCall(t, h.store, "Merge")
			}
		})
	}
}
