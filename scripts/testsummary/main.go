// Command testsummary turns `go test -json` on its standard input into what
// a person reading a CI log needs: the package lines, every failing test's
// own output (a parallel test's lines are interleaved with everyone's in
// -v output, so the tail of the log rarely shows why it failed), and a
// closing line "N passed, N failed, N skipped". The whole plain output goes
// to -log, the failures' text to -failures as well.
//
//	go test -json ./... | go run ./scripts/testsummary -log test.log -failures failures.txt
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent), with
// the build events of Go 1.24 and later.
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string
	Test       string
	Output     string
}

// maxLines bounds what is kept of one test's or package's output: the
// last lines say why it failed.
const maxLines = 150

// tail keeps the last maxLines lines written to it.
type tail struct {
	lines   []string
	dropped int
}

func (t *tail) add(s string) {
	t.lines = append(t.lines, s)
	if len(t.lines) > maxLines {
		t.dropped += len(t.lines) - maxLines
		t.lines = t.lines[len(t.lines)-maxLines:]
	}
}

func (t *tail) writeTo(w io.Writer) {
	if t.dropped > 0 {
		fmt.Fprintf(w, "    [%d earlier lines in the log]\n", t.dropped)
	}
	for _, l := range t.lines {
		fmt.Fprint(w, l)
		if !strings.HasSuffix(l, "\n") {
			fmt.Fprintln(w)
		}
	}
}

// summary is what the stream said so far.
type summary struct {
	passed, failed, skipped int
	outputs                 map[string]*tail // by package + "\x00" + test ("" for the package's own)
	failures                []string         // keys, in the order they failed
	packageLines            []string
	failedPackages          map[string]bool
	packageHadFailingTest   map[string]bool
}

func newSummary() *summary {
	return &summary{outputs: map[string]*tail{}, failedPackages: map[string]bool{}, packageHadFailingTest: map[string]bool{}}
}

func key(pkg, test string) string { return pkg + "\x00" + test }

func (s *summary) take(e event, log io.Writer) {
	pkg := e.Package
	if pkg == "" {
		pkg = e.ImportPath
	}
	switch e.Action {
	case "output", "build-output":
		fmt.Fprint(log, e.Output)
		k := key(pkg, e.Test)
		t := s.outputs[k]
		if t == nil {
			t = &tail{}
			s.outputs[k] = t
		}
		t.add(e.Output)
		if e.Test == "" && isPackageLine(e.Output) {
			s.packageLines = append(s.packageLines, strings.TrimRight(e.Output, "\n"))
		}
	case "pass":
		if e.Test != "" {
			s.passed++
			delete(s.outputs, key(pkg, e.Test))
		}
	case "skip":
		if e.Test != "" {
			s.skipped++
			delete(s.outputs, key(pkg, e.Test))
		}
	case "fail", "build-fail":
		if e.Test != "" {
			s.failed++
			s.packageHadFailingTest[pkg] = true
			s.failures = append(s.failures, key(pkg, e.Test))
		} else {
			s.failedPackages[pkg] = true
		}
	}
}

// isPackageLine is a package's closing line, or a panic's first.
func isPackageLine(s string) bool {
	for _, p := range []string{"ok  \t", "ok \t", "FAIL\t", "FAIL ", "?   \t", "panic:"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return strings.Contains(s, "[build failed]")
}

// report writes the failing tests' output, then that of the packages that
// failed without a failing test (a build failure, a panic, a timeout).
func (s *summary) report(w io.Writer) {
	for _, k := range s.failures {
		pkg, test, _ := strings.Cut(k, "\x00")
		fmt.Fprintf(w, "---- %s %s ----\n", pkg, test)
		if t := s.outputs[k]; t != nil {
			t.writeTo(w)
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(s.failedPackages)) {
		if s.packageHadFailingTest[pkg] {
			continue
		}
		fmt.Fprintf(w, "---- %s (no single test failed: its own output) ----\n", pkg)
		if t := s.outputs[key(pkg, "")]; t != nil {
			t.writeTo(w)
		}
	}
}

func main() {
	logPath := flag.String("log", "", "write the whole plain output here")
	failuresPath := flag.String("failures", "", "write the failures' output here too")
	flag.Parse()
	log := io.Discard
	if *logPath != "" {
		f, err := os.Create(*logPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(2)
		}
		defer func() { _ = f.Close() }()
		log = f
	}
	s := newSummary()
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			// Not an event (go's own complaint before any test ran): kept as is.
			line := sc.Text() + "\n"
			fmt.Fprint(log, line)
			s.packageLines = append(s.packageLines, sc.Text())
			continue
		}
		s.take(e, log)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary: reading the stream:", err)
	}
	for _, l := range s.packageLines {
		fmt.Println(l)
	}
	var failures strings.Builder
	s.report(&failures)
	if failures.Len() > 0 {
		fmt.Println("==== failing tests' own output ====")
		fmt.Print(failures.String())
	}
	if *failuresPath != "" {
		if err := os.WriteFile(*failuresPath, []byte(failures.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
		}
	}
	failed := s.failed
	if failed == 0 && len(s.failedPackages) > 0 {
		failed = 1 // a build failure or a panic outside any test
	}
	fmt.Printf("%d passed, %d failed, %d skipped\n", s.passed, failed, s.skipped)
}
