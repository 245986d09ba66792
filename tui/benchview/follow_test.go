package benchview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/theme"
)

func row(model, task string, repeat int, acceptance string) bench.Row {
	return bench.Row{Stamp: "s", Model: model, Task: task, Repeat: repeat, Status: "completed", Acceptance: acceptance, Harness: &bench.Harness{}}
}

func appendRaw(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// The tail reads each complete line once, numbered as in the file, and
// leaves a line being written for the read after its newline.
func TestTailReadsAppendedRowsAndHoldsAPartialLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "r.jsonl")
	tl := &tail{path: path}
	if u, err := tl.read(); err != nil || !u.Missing || u.Reset {
		t.Fatalf("missing file: %+v %v", u, err)
	}
	for i := range 2 {
		if err := bench.AppendRow(path, row("m", "t", i, bench.AcceptancePass)); err != nil {
			t.Fatal(err)
		}
	}
	u, err := tl.read()
	if err != nil || len(u.Rows) != 2 || u.Rows[0].Line != 1 || u.Rows[1].Line != 2 || u.Rows[1].Repeat != 1 {
		t.Fatalf("first read: %+v %v", u, err)
	}
	line, err := json.Marshal(row("m", "t", 2, bench.AcceptanceFail))
	if err != nil {
		t.Fatal(err)
	}
	half := len(line) / 2
	appendRaw(t, path, string(line[:half]))
	if u, err := tl.read(); err != nil || !u.empty() {
		t.Fatalf("a partial line was read: %+v %v", u, err)
	}
	appendRaw(t, path, string(line[half:])+"\nnot a row\n")
	u, err = tl.read()
	if err != nil || len(u.Rows) != 1 || u.Rows[0].Line != 3 || u.Rows[0].Acceptance != bench.AcceptanceFail || u.Reset {
		t.Fatalf("completed line: %+v %v", u, err)
	}
	if len(u.Problems) != 1 || u.Problems[0].Line != 4 {
		t.Fatalf("problems: %+v", u.Problems)
	}
	if u, err := tl.read(); err != nil || !u.empty() {
		t.Fatalf("nothing new, read %+v %v", u, err)
	}
}

// A file replaced (or cut) is read again from its start.
func TestTailStartsOverOnAReplacedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "r.jsonl")
	for i := range 3 {
		if err := bench.AppendRow(path, row("m", "t", i, bench.AcceptancePass)); err != nil {
			t.Fatal(err)
		}
	}
	tl := &tail{path: path}
	if u, _ := tl.read(); len(u.Rows) != 3 {
		t.Fatalf("rows %d", len(u.Rows))
	}
	other := filepath.Join(dir, "other.jsonl")
	if err := bench.AppendRow(other, row("n", "t", 0, bench.AcceptanceFail)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	u, err := tl.read()
	if err != nil || !u.Reset || len(u.Rows) != 1 || u.Rows[0].Model != "n" || u.Rows[0].Line != 1 {
		t.Fatalf("replaced: %+v %v", u, err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if u, err := tl.read(); err != nil || !u.Reset || len(u.Rows) != 0 {
		t.Fatalf("cut: %+v %v", u, err)
	}
}

// A large read is parsed on every core into exactly what one pass gives.
func TestParallelParseIsTheSequentialOne(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	for i := range 4000 {
		if i%997 == 0 {
			b.WriteString("cut off {\"model\n\n")
		}
		line, err := json.Marshal(row(fmt.Sprintf("model-%d", i%5), "task", i, bench.AcceptancePass))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if b.Len() < parallelFrom {
		t.Fatalf("the sample is %d bytes, too small to be split", b.Len())
	}
	rows, problems := parseLines(b.Bytes(), 7)
	wantRows, wantProblems := bench.ParseLines(b.Bytes(), 7)
	if len(rows) != 4000 || len(problems) != 5 {
		t.Fatalf("%d rows, %d problems", len(rows), len(problems))
	}
	for i := range rows {
		if rows[i].Line != wantRows[i].Line || rows[i].Repeat != wantRows[i].Repeat {
			t.Fatalf("row %d: line %d repeat %d, want %d %d", i, rows[i].Line, rows[i].Repeat, wantRows[i].Line, wantRows[i].Repeat)
		}
	}
	for i := range problems {
		if problems[i].Line != wantProblems[i].Line {
			t.Fatalf("problem %d at line %d, want %d", i, problems[i].Line, wantProblems[i].Line)
		}
	}
}

// next is the follower's next message, within a liveness bound.
func next(t *testing.T, ch <-chan tea.Msg) tea.Msg {
	t.Helper()
	select {
	case msg, ok := <-ch:
		if !ok {
			t.Fatal("the follower ended")
		}
		return msg
	case <-time.After(10 * time.Second):
		t.Fatal("nothing from the follower in 10 s")
	}
	return nil
}

// Rows appended to a followed file reach the view, which counts them at
// once; a sweep's state reaches it too.
func TestFollowedFileUpdatesTheView(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "20261202T130000Z.jsonl")
	if err := bench.AppendRow(path, row("m", "t", 0, bench.AcceptancePass)); err != nil {
		t.Fatal(err)
	}
	km := keys.Default()
	m := New(theme.New(theme.NoColor), &km, nil, "", dir) // the newest file in dir
	m.SetSize(120, 40)
	cmd := m.Start(t.Context())
	defer m.Close()
	fm, ok := cmd().(followingMsg)
	if !ok {
		t.Fatal("Start did not hand over the follower")
	}
	m, _ = m.Update(fm)
	deliver := func() tea.Msg {
		t.Helper()
		msg := next(t, fm.ch)
		m, _ = m.Update(msg)
		return msg
	}
	deliver() // the file
	deliver() // no state
	if m.Path() != path || m.Rows() != 1 || m.t.groups[0].Passes != 1 {
		t.Fatalf("first read: path %q, %d rows", m.Path(), m.Rows())
	}
	// A row appended: the statistics count it.
	if err := bench.AppendRow(path, row("m", "t", 1, bench.AcceptanceFail)); err != nil {
		t.Fatal(err)
	}
	for m.Rows() < 2 {
		deliver()
	}
	if g := m.t.groups[0]; g.N != 2 || g.Passes != 1 || m.t.repeats != 2 {
		t.Fatalf("after an append: %+v", g.GroupStats)
	}
	if !strings.Contains(m.View(t0), "1/2") {
		t.Fatalf("the view does not show the append:\n%s", m.View(t0))
	}
	// Half a row shows nothing; its end shows it.
	line, _ := json.Marshal(row("m2", "t", 0, bench.AcceptancePass))
	appendRaw(t, path, string(line[:10]))
	appendRaw(t, path, string(line[10:])+"\n")
	for m.Rows() < 3 {
		deliver()
	}
	if len(m.t.groups) != 2 || m.rows[2].Model != "m2" || len(m.problems) != 0 {
		t.Fatalf("completed line: %d groups, %+v problems", len(m.t.groups), m.problems)
	}
	// The sweep's state: its cases in flight show.
	st := bench.SweepState{Stamp: "s", Total: 4, InFlight: []bench.Flight{{Model: "m2", Task: "t", Repeat: 1}}}
	data, _ := json.Marshal(st)
	if err := os.WriteFile(bench.StatePath(path), data, 0o600); err != nil {
		t.Fatal(err)
	}
	for m.state == nil {
		deliver()
	}
	if m.alive || !reflect.DeepEqual(m.state.InFlight, st.InFlight) || m.state.Total != 4 {
		t.Fatalf("state %+v alive %v", m.state, m.alive)
	}
	if !strings.Contains(m.View(t0), "sweep stopped") {
		t.Fatalf("a state nobody holds is a stopped sweep:\n%s", m.View(t0))
	}
}

// A results file that is missing, or not a file, is said so.
func TestFollowReportsWhatItCannotRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	km := keys.Default()
	m := New(theme.New(theme.NoColor), &km, nil, "", dir)
	m.SetSize(100, 20)
	cmd := m.Start(t.Context())
	defer m.Close()
	fm := cmd().(followingMsg)
	m, _ = m.Update(fm)
	m, _ = m.Update(next(t, fm.ch))
	if !strings.Contains(m.View(t0), "no results file in "+dir) {
		t.Fatalf("empty bench root:\n%s", m.View(t0))
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	m = New(theme.New(theme.NoColor), &km, nil, fifo, "")
	m.SetSize(100, 20)
	cmd = m.Start(t.Context())
	defer m.Close()
	fm = cmd().(followingMsg)
	m, _ = m.Update(fm)
	m, _ = m.Update(next(t, fm.ch))
	if !strings.Contains(m.View(t0), "is not a regular file") {
		t.Fatalf("a FIFO:\n%s", m.View(t0))
	}
}

func mkfifo(path string) error { return unix.Mkfifo(path, 0o600) }
