package export

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// fuzzCaps are small, so inputs the fuzzer can afford to grow still
// cross them.
var fuzzCaps = Caps{MaxFiles: 64, MaxBytes: 16 << 10}

// maxSeed keeps the table's big streams out of the corpus: every
// mutation of one would cost as much to run, and to minimise.
const maxSeed = 32 << 10

var kinds = []error{
	ErrGlobalHeader, ErrDisallowedType, ErrAbsolutePath, ErrInvalidComponent, ErrGitEntry,
	ErrInvalidTarget, ErrTooManyFiles, ErrTooManyBytes, ErrThroughSymlink, ErrExtraction,
}

// addSeeds gives the fuzzers the table's streams, the happy path, a PAX
// record past fuzzCaps and a GNU-format archive to mutate from.
func addSeeds(f *testing.F) {
	fake := layout{outside: "/tmp/dirtywork-fuzz-outside"}
	for _, tc := range refusalCases(f) {
		if s := tc.stream(fake); len(s) <= maxSeed {
			f.Add(s, false)
		}
	}
	f.Add(buildTar(f, happyEntries()...), false)
	f.Add(buildTar(f, file("a", "a"), entry{name: "p", body: "x", pax: map[string]string{
		"comment": strings.Repeat("x", 20<<10),
	}}), false)
	f.Add([]byte{}, false)
	for _, script := range scriptSeeds {
		f.Add([]byte(script), true)
	}
	var gnu bytes.Buffer
	tw := tar.NewWriter(&gnu)
	hdr := &tar.Header{Name: "g/" + strings.Repeat("l", 120), Typeflag: tar.TypeReg, Size: 2, Mode: 0o644, Format: tar.FormatGNU}
	if err := tw.WriteHeader(hdr); err != nil {
		f.Fatal(err)
	}
	if _, err := tw.Write([]byte("gn")); err != nil {
		f.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		f.Fatal(err)
	}
	f.Add(gnu.Bytes(), false)
}

// scriptSeeds are scripts (see scriptTar) for the hostile shapes.
var scriptSeeds = []string{
	"dsrc\nfsrc/a\nxsrc/run\nllink>src/a\nlout>../../x\nfempty",
	"lout>../outside\nfout/pwned",
	"labs>/tmp\ndabs/sub",
	"ff\nff/g",
	"fa\nfa",
	"dd\nfd",
	"d.git\nfsub/.GIT/x",
	"f../x\nf/abs\nfa/../../x",
	"hh>a\ncc\npp\ngg",
	"pp\nhh>p\nhi>h\nfa\nhj>a\ncc\nhk>c",
	"bb1\nbb2\nbb3\nbb4\nbb5",
	"ll>d\ndd\nfl/x",
}

// scriptTar builds a well-formed archive from a script, so the fuzzer
// explores names, types and their order instead of tar checksums. Each
// line is a type letter and a name; symlinks and hardlinks write
// `name>target`. Letters: f file, x executable, d directory, l symlink,
// h hardlink, c character device, p FIFO, g PAX global header, b a 4 KiB
// file; any other letter is a file. Entries archive/tar cannot encode
// are left out.
func scriptTar(script []byte) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, line := range strings.Split(string(script), "\n") {
		if line == "" {
			continue
		}
		name, target, _ := strings.Cut(line[1:], ">")
		hdr := &tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg}
		body := []byte("body of " + name)
		switch line[0] {
		case 'x':
			hdr.Mode = 0o755
		case 'd':
			hdr.Typeflag, hdr.Name, body = tar.TypeDir, name+"/", nil
		case 'l':
			hdr.Typeflag, hdr.Linkname, body = tar.TypeSymlink, target, nil
		case 'h':
			hdr.Typeflag, hdr.Linkname, body = tar.TypeLink, target, nil
		case 'c':
			hdr.Typeflag, body = tar.TypeChar, nil
		case 'p':
			hdr.Typeflag, body = tar.TypeFifo, nil
		case 'g':
			hdr = &tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: name, PAXRecords: map[string]string{"comment": name}}
			body = nil
		case 'b':
			body = bytes.Repeat([]byte("b"), 4096)
		}
		hdr.Size = int64(len(body))
		if tw.WriteHeader(hdr) != nil {
			continue
		}
		if _, err := tw.Write(body); err != nil {
			break
		}
	}
	_ = tw.Close() // a failed close still leaves a stream worth reading
	return buf.Bytes()
}

// fuzzStream is the stream a fuzz input stands for.
func fuzzStream(data []byte, script bool) []byte {
	if script {
		return scriptTar(data)
	}
	return data
}

// FuzzValidate checks, for any bytes (or any script's archive), that Validate neither panics nor
// lets through what it must refuse, and that its answer does not depend
// on how the stream is chunked.
func FuzzValidate(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, script bool) {
		data = fuzzStream(data, script)
		sum, err := Validate(bytes.NewReader(data), fuzzCaps)
		again, err2 := Validate(iotest.OneByteReader(bytes.NewReader(data)), fuzzCaps)
		if errText(err) != errText(err2) || !reflect.DeepEqual(sum, again) {
			t.Fatalf("chunking changed the answer: %v / %v, %+v / %+v", err, err2, sum, again)
		}
		checkAnswer(t, sum, err)
	})
}

// FuzzExtract extracts any bytes (or any script's archive) next to a directory nothing may reach,
// and checks nothing did, that a refusal left only .git, that Extract
// answers as Validate does, and that an accepted stream produced exactly
// the archive's tree.
func FuzzExtract(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, script bool) {
		data = fuzzStream(data, script)
		l := newLayout(t)
		want, werr := Validate(bytes.NewReader(data), fuzzCaps)
		sum, err := Extract(bytes.NewReader(data), l.dest, fuzzCaps)
		l.assertContained(t)
		if errText(err) != errText(werr) || !reflect.DeepEqual(sum, want) {
			t.Fatalf("Extract answered %v, %+v; Validate %v, %+v", err, sum, werr, want)
		}
		checkAnswer(t, sum, err)
		if err != nil {
			l.assertOnlyGit(t)
			return
		}
		if got, want := describeTree(t, l.dest), archiveTree(t, data); !reflect.DeepEqual(got, want) {
			t.Fatalf("extracted tree:\n got  %q\n want %q", got, want)
		}
	})
}

// checkAnswer holds for any answer: a refusal is a *Refusal of a known
// kind, and a summary stays within the caps and lists only safe names.
func checkAnswer(t *testing.T, sum Summary, err error) {
	t.Helper()
	if err != nil {
		ref := asRefusal(t, err)
		known := false
		for _, k := range kinds {
			known = known || errors.Is(err, k)
		}
		if !known || ref.Reason == "" {
			t.Fatalf("refusal %q has no known kind", ref.Reason)
		}
	}
	if sum.Members > fuzzCaps.MaxFiles || sum.Bytes > fuzzCaps.MaxBytes || int64(len(sum.Files)) > sum.Members {
		t.Fatalf("summary past the caps: %+v", sum)
	}
	seen := map[string]bool{}
	for _, name := range sum.Files {
		if !safeName(name) || seen[name] {
			t.Fatalf("summary lists %q (unsafe or twice)", name)
		}
		seen[name] = true
	}
	for _, name := range sum.EscapingSymlinks {
		if !seen[name] {
			t.Fatalf("escaping symlink %q is not among the files", name)
		}
	}
}

// safeName restates the name rules independently of splitName.
func safeName(name string) bool {
	if strings.HasPrefix(name, "/") {
		return false
	}
	for _, c := range strings.Split(name, "/") {
		if c == "" || c == "." || c == ".." || strings.EqualFold(c, ".git") {
			return false
		}
	}
	return true
}

// archiveTree reads an accepted archive with archive/tar alone and says
// what extracting it must produce, in describeTree's terms.
func archiveTree(t *testing.T, data []byte) map[string]string {
	t.Helper()
	want := map[string]string{}
	skipped := map[string]bool{} // FIFOs, devices and hard links to them
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return want
		}
		if err != nil {
			t.Fatalf("an accepted archive does not read: %v", err)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		switch {
		case hdr.Typeflag == tar.TypeFifo || hdr.Typeflag == tar.TypeChar || hdr.Typeflag == tar.TypeBlock,
			hdr.Typeflag == tar.TypeLink && skipped[hdr.Linkname]:
			skipped[name] = true
			continue // left out, parents and all
		}
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			want[dir] = "d 0755"
		}
		switch hdr.Typeflag {
		case tar.TypeLink:
			want[name] = want[hdr.Linkname]
		case tar.TypeDir:
			want[name] = "d 0755"
		case tar.TypeSymlink:
			want[name] = "l -> " + hdr.Linkname
		case tar.TypeReg:
			body, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("read %q: %v", hdr.Name, err)
			}
			mode := "0644"
			if hdr.Mode&0o111 != 0 {
				mode = "0755"
			}
			want[name] = fmt.Sprintf("f %s %s", mode, body)
		default:
			t.Fatalf("an accepted archive holds %q of type %q", hdr.Name, hdr.Typeflag)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
