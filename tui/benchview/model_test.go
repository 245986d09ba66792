package benchview

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// Rows of one model served two ways are two rows of the model table, as
// summarize shows them.
func TestServingsAreSeparateModelRows(t *testing.T) {
	t.Parallel()
	rows, runs := sampleRows()
	m := sampleModel(t, 200, 50, theme.NoColor, rows, runs)
	var labels []string
	for _, g := range m.t.groups {
		labels = append(labels, g.Label)
	}
	want := []string{
		"devstral [llama.cpp b6000 ctx=32768 Q8_0 slots=4]", "devstral [ollama 0.12.3 ctx=32768 Q8_0 slots=1]",
		"gpt-oss-20b", "qwen/qwen3-coder [lmstudio 0.3.31 ctx=65536 q4_k_m slots=2]",
	}
	if strings.Join(labels, "|") != strings.Join(want, "|") {
		t.Fatalf("groups %q", labels)
	}
	screen := ansi.Strip(m.View(t0))
	for _, l := range want {
		if !strings.Contains(screen, l) {
			t.Errorf("the table lacks %q", l)
		}
	}
	// The statistics are summarize's.
	res := &bench.Results{Path: samplePath, Rows: rows}
	sum := bench.Summarize(res, nil, nil)
	for i, g := range sum.A.Groups {
		if m.t.groups[i].Passes != g.Passes || m.t.groups[i].N != g.N {
			t.Errorf("group %s: %d/%d, summarize %d/%d", g.Label, m.t.groups[i].Passes, m.t.groups[i].N, g.Passes, g.N)
		}
	}
}

// n walks the passing cases nobody reviewed, in the table's order,
// skipping reviewed ones; a verdict given meanwhile counts at once.
func TestNextUnreviewedPass(t *testing.T) {
	t.Parallel()
	rows, runs := sampleRows()
	m := sampleModel(t, 140, 40, theme.Dark, rows, runs)
	seen := map[string]bool{}
	var first string
	for {
		m, _ = press(m, "n")
		slug, open := m.CaseOpen()
		if !open {
			t.Fatal("n opened no case")
		}
		if slug == first {
			break
		}
		if first == "" {
			first = slug
		}
		i := m.open.row
		if !rows[i].Passed() || runs[slug].Verdict != "" || seen[slug] {
			t.Fatalf("n went to %s (acceptance %s, verdict %q, seen %v)", slug, rows[i].Acceptance, runs[slug].Verdict, seen[slug])
		}
		seen[slug] = true
		m, _ = press(m, "esc")
	}
	want := 0
	for _, r := range rows {
		if r.Passed() && runs[*r.Slug].Verdict == "" {
			want++
		}
	}
	if len(seen) != want {
		t.Fatalf("n visited %d cases, %d are waiting", len(seen), want)
	}
	// Accept the first: it is counted and skipped from now on.
	run := runs[first]
	run.Verdict = transcript.VerdictAccept
	runs[first] = run
	before := m.t.groups[m.cur.group].Verdicts.Verdicts
	m.RunsChanged()
	if got := m.t.groups[m.cur.group].Verdicts.Verdicts; got != before+1 {
		t.Fatalf("verdicts %d after one more, was %d", got, before)
	}
	for range want {
		m, _ = press(m, "esc", "n")
		if slug, _ := m.CaseOpen(); slug == first {
			t.Fatal("n went to a case with a verdict")
		}
	}
}

// When every passing case has a verdict, n says so.
func TestNextUnreviewedWhenNoneWaits(t *testing.T) {
	t.Parallel()
	rows, runs := sampleRows()
	for slug, r := range runs {
		r.Verdict = transcript.VerdictReject
		runs[slug] = r
	}
	m := sampleModel(t, 120, 30, theme.NoColor, rows, runs)
	m, _ = press(m, "n")
	if _, open := m.CaseOpen(); open || !strings.Contains(m.View(t0), "no passing case is waiting for review") {
		t.Fatalf("n with nothing waiting:\n%s", m.View(t0))
	}
}

// Enter opens the case under the cursor and reads its acceptance output
// from its run dir; d asks for the review of its run; esc and q go back.
func TestEnterOpensACase(t *testing.T) {
	t.Parallel()
	rows, runs := sampleRows()
	dir := t.TempDir()
	for i := range rows {
		rd := filepath.Join(dir, *rows[i].Slug)
		rows[i].RunDir = &rd
		r := runs[*rows[i].Slug]
		r.RunDir = rd
		runs[*rows[i].Slug] = r
	}
	// qwen/qwen3-coder, node-cli-flag, repeat 1 failed.
	if err := os.MkdirAll(*rows[4].RunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*rows[4].RunDir, bench.AcceptanceFile), []byte("acceptance: fail\nexit status 1\n\nFAIL: test_flag (expected --json)\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := sampleModel(t, 120, 40, theme.NoColor, rows, runs)
	m, _ = press(m, "j", "l", "l", "l", "l", "l", "l", "l", "l", "l", "l")
	if c := m.cur; c.task != 1 || c.group != 3 || c.repeat != 1 {
		t.Fatalf("cursor %+v", c)
	}
	m, cmd := press(m, "enter")
	if slug, open := m.CaseOpen(); !open || slug != *rows[4].Slug || cmd == nil {
		t.Fatalf("enter opened %q (%v)", slug, open)
	}
	m, _ = m.Update(cmd())
	screen := ansi.Strip(m.View(t0))
	for _, want := range []string{
		"Case qwen/qwen3-coder", "node-cli-flag", "repeat 1", "FAIL: test_flag (expected --json)",
		"lmstudio 0.3.31 · context 65,536 · q4_k_m · 2 slots", "Failure evidence", "acceptance: exit status 1",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the case lacks %q:\n%s", want, screen)
		}
	}
	m, _ = press(m, "d")
	if asked, ok := m.Take().(ReviewMsg); !ok || asked.Slug != *rows[4].Slug {
		t.Fatalf("d asked for %#v", asked)
	}
	m, _ = press(m, "q")
	if _, open := m.CaseOpen(); open {
		t.Fatal("q left the case open")
	}
	m, _ = press(m, "esc")
	if _, ok := m.Take().(CloseMsg); !ok {
		t.Fatal("esc on the table did not ask to close")
	}
	// A case whose run the root does not hold has no review to open.
	delete(runs, *rows[4].Slug)
	m, _ = press(m, "enter", "d")
	if m.Take() != nil || !strings.Contains(m.View(t0), "not in the runs root") {
		t.Fatalf("review of an unknown run:\n%s", m.View(t0))
	}
}

// Text from the results file and the acceptance output is shown, never
// sent to the terminal.
func TestWorkerTextRendersInert(t *testing.T) {
	t.Parallel()
	const hostile = "x\x1b]52;c;cHduZWQ=\x07\x1b]0;title\x07\x1b[2J\u202eevil"
	r := row("model"+hostile, "task"+hostile, 0, bench.AcceptanceFail)
	r.FailureClass, r.FailureEvidence = bench.FailureModel, "evidence"+hostile
	r.Slug = ptr("s-1")
	r.Serving = &bench.Serving{Server: "srv" + hostile, Quantization: "q" + hostile}
	m := sampleModel(t, 160, 40, theme.NoColor, []bench.Row{r}, sampleRuns{})
	m, _ = m.Update(stateMsg{state: &bench.SweepState{Total: 2, InFlight: []bench.Flight{{Model: "m" + hostile, Task: "t" + hostile}}}, alive: true})
	screens := []string{m.View(t0)}
	m, _ = press(m, "enter")
	m, _ = m.Update(acceptanceMsg{row: 0, text: "out" + hostile + "\n"})
	screens = append(screens, m.View(t0))
	for _, s := range screens {
		for _, bad := range []string{"\x1b]", "\x07", "\x1b[2J", "\u202e"} {
			if strings.Contains(s, bad) {
				t.Fatalf("the screen sends %q:\n%q", bad, s)
			}
		}
		if !strings.Contains(s, "␛]52") {
			t.Fatalf("the escape is not shown:\n%s", s)
		}
	}
}

// The cursor stays on its case while rows arrive around it.
func TestCursorStaysOnItsCaseAsRowsArrive(t *testing.T) {
	t.Parallel()
	rows, runs := sampleRows()
	var qwen, others []bench.Row
	for _, r := range rows {
		if r.Model == "qwen/qwen3-coder" {
			qwen = append(qwen, r)
		} else {
			others = append(others, r)
		}
	}
	m := sampleModel(t, 120, 40, theme.NoColor, qwen, runs)
	m, _ = press(m, "j", "l")
	before, _ := m.cursorCase()
	m, _ = m.Update(rowsMsg{path: samplePath, u: update{Rows: others}})
	after, _ := m.cursorCase()
	if before != after || m.t.groups[m.cur.group].Model != "qwen/qwen3-coder" || len(m.t.groups) != 4 {
		t.Fatalf("cursor on %+v, was on %+v", after, before)
	}
}

// A long acceptance output is shown by its end, where the verdict is.
func TestLongAcceptanceOutputKeepsItsEnd(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), bench.AcceptanceFile)
	text := strings.Repeat("noise\n", acceptanceLimit/6+1000) + "FAILED: 2 of 5"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readTail(path, acceptanceLimit)
	if err != nil || !strings.HasPrefix(got, "[… the first ") || !strings.HasSuffix(got, "FAILED: 2 of 5") || len(got) > acceptanceLimit+100 {
		t.Fatalf("read %d bytes: %q … %v", len(got), got[:min(len(got), 40)], err)
	}
	if _, err := readTail(filepath.Dir(path), acceptanceLimit); err == nil {
		t.Fatal("a directory read as an acceptance output")
	}
}
