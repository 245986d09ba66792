package toolbox

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/fsops"
)

// tools are the calls host mode makes on fsops and docker mode on the
// client.
type tools interface {
	ReadFile(ctx context.Context, path string, offset, limit int) (string, error)
	WriteFile(ctx context.Context, path, content string) (string, error)
	EditFile(ctx context.Context, path, oldString, newString string) (string, error)
	InsertText(ctx context.Context, path, anchor, text string, after bool) (string, error)
	ApplyEdits(ctx context.Context, path string, edits []sandbox.Edit) (string, error)
	ListDir(ctx context.Context, path string) (string, error)
	Grep(ctx context.Context, args sandbox.GrepArgs) (string, error)
}

// direct calls fsops in-process, as host mode does.
type direct struct{ fs *fsops.FS }

func (d direct) ReadFile(_ context.Context, path string, offset, limit int) (string, error) {
	return d.fs.ReadFile(path, offset, limit)
}

func (d direct) WriteFile(_ context.Context, path, content string) (string, error) {
	return d.fs.WriteFile(path, content)
}

func (d direct) EditFile(_ context.Context, path, oldString, newString string) (string, error) {
	return d.fs.EditFile(path, oldString, newString)
}

func (d direct) InsertText(_ context.Context, path, anchor, text string, after bool) (string, error) {
	return d.fs.InsertText(path, anchor, text, after)
}

func (d direct) ApplyEdits(_ context.Context, path string, edits []sandbox.Edit) (string, error) {
	fe := make([]fsops.Edit, len(edits))
	for i, e := range edits {
		fe[i] = fsops.Edit{Old: e.Old, New: e.New}
	}
	return d.fs.ApplyEdits(path, fe)
}

func (d direct) ListDir(_ context.Context, path string) (string, error) { return d.fs.ListDir(path) }

func (d direct) Grep(ctx context.Context, a sandbox.GrepArgs) (string, error) {
	return d.fs.Grep(ctx, a.Pattern, a.Path, a.Glob, a.Timeout)
}

// invalidName is a file name that is not valid UTF-8: JSON strings would
// turn its byte into U+FFFD.
const invalidName = "bad\xffname.txt"

// buildTree fills dir (which must exist and be empty) with every kind of
// entry the tools treat differently.
func buildTree(t testing.TB, dir string) {
	t.Helper()
	var big strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&big, "line %d with some words to pass the read cap\n", i)
	}
	files := map[string]string{
		"a.txt":             "one\ntwo\nthree\n",
		"twice.txt":         "same\nsame\n",
		"big.txt":           big.String(),
		"bin.dat":           "text\x00\xff\xfe more",
		"latin1.txt":        "caf\xe9\n",
		"crlf.txt":          "one\r\ntwo\r\n",
		"sub/dir/c.go":      "package c\n\nfunc two() int { return 2 }\n",
		"sub/d.txt":         "two words\n",
		".gitignore":        "ignored/\n",
		"ignored/x.txt":     "two hidden by ignore\n",
		".hidden/h.txt":     "two hidden by name\n",
		invalidName:         "two in a badly named file\n",
		"unicode/\u00e9.md": "two \u2028 separators\u2029\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"link-in":     "a.txt",
		"link-out":    "/etc/passwd",
		"link-up":     "../outside",
		"link-broken": "missing",
		"sub/link-a":  "../a.txt",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// emptyDir removes everything in dir, keeping dir itself (a server holds
// it open).
func emptyDir(t testing.TB, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot describes every entry below dir: type, content or link target.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			snap[rel] = "link " + target + fmt.Sprint(err)
		case d.IsDir():
			snap[rel] = "dir"
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			snap[rel] = "file " + string(data) + fmt.Sprint(err)
		default:
			snap[rel] = "special " + d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// toolCall is one step of the equivalence script.
type toolCall struct {
	name string
	run  func(ctx context.Context, tl tools) (string, error)
}

func equivalenceScript(dir string) []toolCall {
	read := func(p string, off, lim int) func(context.Context, tools) (string, error) {
		return func(ctx context.Context, tl tools) (string, error) { return tl.ReadFile(ctx, p, off, lim) }
	}
	list := func(p string) func(context.Context, tools) (string, error) {
		return func(ctx context.Context, tl tools) (string, error) { return tl.ListDir(ctx, p) }
	}
	grep := func(pattern, p, glob string) func(context.Context, tools) (string, error) {
		return func(ctx context.Context, tl tools) (string, error) {
			return tl.Grep(ctx, sandbox.GrepArgs{Pattern: pattern, Path: p, Glob: glob})
		}
	}
	write := func(p, content string) func(context.Context, tools) (string, error) {
		return func(ctx context.Context, tl tools) (string, error) { return tl.WriteFile(ctx, p, content) }
	}
	edit := func(p, o, n string) func(context.Context, tools) (string, error) {
		return func(ctx context.Context, tl tools) (string, error) { return tl.EditFile(ctx, p, o, n) }
	}
	insert := func(p, anchor, text string, after bool) func(context.Context, tools) (string, error) {
		return func(ctx context.Context, tl tools) (string, error) { return tl.InsertText(ctx, p, anchor, text, after) }
	}
	apply := func(p string, edits ...sandbox.Edit) func(context.Context, tools) (string, error) {
		return func(ctx context.Context, tl tools) (string, error) { return tl.ApplyEdits(ctx, p, edits) }
	}
	return []toolCall{
		{"read", read("a.txt", 0, 400)},
		{"read absolute", read(dir+"/a.txt", 0, 400)},
		{"read window", read("big.txt", 100, 50)},
		{"read over the cap", read("big.txt", 0, 400)},
		{"read negative offset and limit", read("a.txt", -5, -1)},
		{"read missing", read("nope.txt", 0, 400)},
		{"read outside", read("../outside.txt", 0, 400)},
		{"read absolute outside", read("/etc/passwd", 0, 400)},
		{"read escaping link", read("link-out", 0, 400)},
		{"read inner link", read("link-in", 0, 400)},
		{"read binary", read("bin.dat", 0, 400)},
		{"read latin1", read("latin1.txt", 0, 400)},
		{"read crlf", read("crlf.txt", 0, 400)},
		{"read fifo", read("fifo", 0, 400)},
		{"read directory", read("sub", 0, 400)},
		{"read invalid name", read(invalidName, 0, 400)},
		{"read unicode separators", read("unicode/\u00e9.md", 0, 400)},
		{"list root", list(".")},
		{"list sub", list("sub")},
		{"list empty", list("empty")},
		{"list missing", list("nope")},
		{"list file", list("a.txt")},
		{"list outside", list("..")},
		{"grep", grep("two", ".", "")},
		{"grep glob", grep("two", ".", "*.go")},
		{"grep negated glob", grep("two", ".", "!*.go")},
		{"grep path", grep("t", "sub", "")},
		{"grep one file", grep("o", "a.txt", "")},
		{"grep ignored file named", grep("two", "ignored/x.txt", "")},
		{"grep no match", grep("zzz", ".", "")},
		{"grep bad regex", grep("(", ".", "")},
		{"grep outside", grep("root", "/etc", "")},
		{"grep binary named", grep("text", "bin.dat", "")},
		{"write new nested", write("new/deep/n.txt", "fresh\ncontent\n")},
		{"write over", write("a.txt", "one\nTWO\nthree\n")},
		{"write into .git", write(".git/config", "x")},
		{"write through inner link", write("link-in", "x")},
		{"write fifo", write("fifo", "x")},
		{"write outside", write("../escape.txt", "x")},
		{"write too large", write("huge.txt", strings.Repeat("x", 5<<20+1))},
		{"write invalid name", write(invalidName, "rewritten\n")},
		{"write invalid utf8 content", write("raw.bin", "\xff\xfe\x00")},
		{"edit", edit("a.txt", "TWO", "two again")},
		{"edit ambiguous", edit("twice.txt", "same", "other")},
		{"edit missing text", edit("a.txt", "absent", "x")},
		{"edit latin1", edit("latin1.txt", "caf", "x")},
		{"edit missing file", edit("nope.txt", "a", "b")},
		{"edit crlf", edit("crlf.txt", "two", "deux")},
		{"insert before", insert("a.txt", "three", "before three", false)},
		{"insert after", insert("a.txt", "one", "after one\n", true)},
		{"insert ambiguous", insert("twice.txt", "same", "x", true)},
		{"apply edits", apply("sub/d.txt", sandbox.Edit{Old: "two", New: "2"}, sandbox.Edit{Old: "words", New: "w"})},
		{"apply edits failing second", apply("a.txt", sandbox.Edit{Old: "one", New: "1"}, sandbox.Edit{Old: "absent", New: "x"})},
		{"apply edits empty old", apply("a.txt", sandbox.Edit{Old: "", New: "x"})},
		{"read after edits", read("a.txt", 0, 400)},
		{"list after writes", list(".")},
		{"grep after writes", grep("two|2|fresh", ".", "")},
	}
}

// runScript runs the script on a fresh tree in dir and returns each
// call's outcome.
func runScript(t *testing.T, dir string, tl tools) []string {
	t.Helper()
	var outs []string
	for _, c := range equivalenceScript(dir) {
		out, err := c.run(t.Context(), tl)
		outs = append(outs, fmt.Sprintf("%s => %q, err %v", c.name, out, err))
	}
	return outs
}

// TestEquivalenceWithFsops proves the server's file tools, list_dir and
// grep answer byte for byte as fsops does in-process (host mode), over
// both transports, and leave the tree in the same state.
func TestEquivalenceWithFsops(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			dir := t.TempDir()
			buildTree(t, dir)
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			want := runScript(t, dir, direct{fsops.New(root, dir)})
			_ = root.Close()
			wantTree := snapshot(t, dir)

			emptyDir(t, dir)
			buildTree(t, dir)
			got := runScript(t, dir, tr.start(t, dir))
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("call %d differs:\n got %.600s\nwant %.600s", i, got[i], want[i])
				}
			}
			gotTree := snapshot(t, dir)
			if fmt.Sprint(gotTree) != fmt.Sprint(wantTree) {
				t.Errorf("trees differ after the script:\n got %.2000v\nwant %.2000v", gotTree, wantTree)
			}
			// The script must exercise what it claims: spot-check a few
			// host-mode answers.
			for _, frag := range []string{"resolves outside the worktree", "Writing inside .git/ is not allowed", "over the 5242880-byte write limit", "is a symlink", `bad\xffname.txt`, "No matches found."} {
				if !strings.Contains(strings.Join(want, "\n"), frag) {
					t.Errorf("no host-mode answer holds %q: the script misses a case", frag)
				}
			}
		})
	}
}
