package diff

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	patch := `diff --git a/invoice.py b/invoice.py
index 1111111..2222222 100644
--- a/invoice.py
+++ b/invoice.py
@@ -7,4 +7,5 @@ def subtotal(lines):
 
 def total(lines, tax_rate):
-    return round(subtotal(lines) * tax_rate, 2)
+    net = subtotal(lines)
+    return round(net + net * tax_rate, 2)
@@ -20,2 +21,2 @@
-a
+b
\ No newline at end of file
diff --git a/new file.txt b/new file.txt
new file mode 100644
index 0000000..e69de29
--- /dev/null
+++ b/new file.txt
@@ -0,0 +1 @@
+hello
diff --git a/gone.go b/gone.go
deleted file mode 100644
--- a/gone.go
+++ /dev/null
@@ -1 +0,0 @@
-package gone
diff --git a/old.txt b/renamed.txt
similarity index 100%
rename from old.txt
rename to renamed.txt
diff --git "a/tab\there.txt" "b/tab\there.txt"
--- "a/tab\there.txt"
+++ "b/tab\there.txt"
@@ -1 +1 @@
-x
+y
diff --git a/logo.png b/logo.png
Binary files a/logo.png and b/logo.png differ
[patch truncated at 10 MB]
`
	files := Parse(patch)
	type want struct {
		path, old, status string
		added, deleted    int
		hunks             int
		binary            bool
	}
	wants := []want{
		{"invoice.py", "invoice.py", "modified", 3, 2, 2, false},
		{"new file.txt", "", "added", 1, 0, 1, false},
		{"gone.go", "gone.go", "deleted", 0, 1, 1, false},
		{"renamed.txt", "old.txt", "renamed", 0, 0, 0, false},
		{"tab\there.txt", "tab\there.txt", "modified", 1, 1, 1, false},
		{"logo.png", "logo.png", "modified", 0, 0, 0, true},
	}
	if len(files) != len(wants) {
		t.Fatalf("%d files: %+v", len(files), files)
	}
	for i, w := range wants {
		f := files[i]
		if f.Path != w.path || f.OldPath != w.old || f.Status != w.status || f.Added != w.added || f.Deleted != w.deleted || len(f.Hunks) != w.hunks || f.Binary != w.binary {
			t.Errorf("file %d = %+v, want %+v", i, f, w)
		}
	}
	// Line numbers follow the hunk headers.
	inv := files[0]
	var nums []int
	for _, l := range inv.Lines {
		if l.Kind == Add {
			nums = append(nums, l.New)
		}
	}
	if len(nums) != 3 || nums[0] != 9 || nums[1] != 10 || nums[2] != 21 {
		t.Fatalf("added line numbers = %v", nums)
	}
	if a, d := Totals(files); a != 5 || d != 4 {
		t.Fatalf("totals = +%d -%d", a, d)
	}
	last := files[len(files)-1].Lines
	if !strings.Contains(last[len(last)-1].Text, "patch truncated") {
		t.Fatalf("the truncation marker was dropped: %+v", last)
	}
}

func TestParseEmptyAndGarbage(t *testing.T) {
	if f := Parse(""); len(f) != 0 {
		t.Fatalf("empty patch: %+v", f)
	}
	f := Parse("not a diff\nat all\n")
	if len(f) != 1 || len(f[0].Lines) != 2 {
		t.Fatalf("garbage kept as meta: %+v", f)
	}
}

func BenchmarkParse10k(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("diff --git a/big.go b/big.go\n--- a/big.go\n+++ b/big.go\n@@ -1,5000 +1,5000 @@\n")
	for i := range 5000 {
		sb.WriteString("-\told := compute(" + strings.Repeat("x", i%40) + ")\n+\tnew := compute(" + strings.Repeat("y", i%40) + ")\n")
	}
	patch := sb.String()
	b.ResetTimer()
	for b.Loop() {
		Parse(patch)
	}
}
