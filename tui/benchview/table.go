package benchview

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/bench"
)

// table is what the view draws, made from the rows and the verdicts.
type table struct {
	groups []bench.RowGroup
	// tasks are the tasks of the rows and of the cases in flight, sorted.
	tasks []string
	// cells maps a task and a group to its rows by repeat (a case scored
	// twice shows its last row).
	cells map[cellKey]map[int]int
	// repeats is the marks a cell has: the greatest repeat, plus one.
	repeats int
	// verdicts are the verdicts the statistics counted, per row.
	verdicts []string
	// wall is each group's median seconds per case (nil: none measured).
	wall []*float64
	// flights are the cases in flight of a running sweep.
	flights map[flightKey]bench.Flight
	// scored counts the distinct cases among the rows, passed the rows
	// that passed.
	scored, passed int
}

type cellKey struct{ task, group int }

type flightKey struct {
	model, task string
	repeat      int
}

// cursor is a case of the tasks × models table: a task, a group and a
// repeat.
type cursor struct{ task, group, repeat int }

// rebuild makes the statistics and the table again; the cursor stays on
// its case while rows arrive around it.
func (m *Model) rebuild() {
	at, had := m.cursorCase()
	defer func() {
		if had {
			m.placeCursor(at)
		}
	}()
	t := &m.t
	t.groups = bench.GroupRows(m.rows, m.lookup())
	t.verdicts = make([]string, len(m.rows))
	for i := range m.rows {
		t.verdicts[i] = m.verdictOf(i)
	}
	t.wall = make([]*float64, len(t.groups))
	for gi, g := range t.groups {
		var walls []float64
		for _, i := range g.Rows {
			if w := m.rows[i].WallS; w != nil {
				walls = append(walls, float64(*w))
			}
		}
		if len(walls) > 0 {
			med := median(walls)
			t.wall[gi] = &med
		}
	}
	cases := map[bench.CaseKey]bool{}
	t.passed = 0
	for i := range m.rows {
		cases[m.rows[i].Case()] = true
		if m.rows[i].Passed() {
			t.passed++
		}
	}
	t.scored = len(cases)
	m.index()
}

// index lays the rows and the cases in flight out by task and group.
func (m *Model) index() {
	t := &m.t
	seen := map[string]bool{}
	t.tasks = t.tasks[:0]
	add := func(task string) {
		if !seen[task] {
			seen[task] = true
			t.tasks = append(t.tasks, task)
		}
	}
	t.repeats = 0
	for i := range m.rows {
		add(m.rows[i].Task)
		t.repeats = max(t.repeats, m.rows[i].Repeat+1)
	}
	for _, f := range t.flights {
		add(f.Task)
		t.repeats = max(t.repeats, f.Repeat+1)
	}
	slices.Sort(t.tasks)
	taskIdx := make(map[string]int, len(t.tasks))
	for i, task := range t.tasks {
		taskIdx[task] = i
	}
	t.cells = map[cellKey]map[int]int{}
	for gi, g := range t.groups {
		for _, i := range g.Rows {
			r := &m.rows[i]
			k := cellKey{taskIdx[r.Task], gi}
			if t.cells[k] == nil {
				t.cells[k] = map[int]int{}
			}
			t.cells[k][r.Repeat] = i
		}
	}
	m.clampCursor()
}

// flightsOf are the cases a running sweep has in flight.
func flightsOf(st *bench.SweepState, alive bool) map[flightKey]bench.Flight {
	if st == nil || !alive {
		return nil
	}
	out := make(map[flightKey]bench.Flight, len(st.InFlight))
	for _, f := range st.InFlight {
		out[flightKey{f.Model, f.Task, f.Repeat}] = f
	}
	return out
}

// flightAt is the case in flight at task, group and repeat, if any. A
// flight belongs to the group of its model when the model has one group.
func (m *Model) flightAt(c cursor) (bench.Flight, bool) {
	if len(m.t.flights) == 0 || c.group >= len(m.t.groups) || c.task >= len(m.t.tasks) {
		return bench.Flight{}, false
	}
	model := m.t.groups[c.group].Model
	for gi, g := range m.t.groups {
		if gi != c.group && g.Model == model {
			return bench.Flight{}, false // served two ways: which one is unknown
		}
	}
	f, ok := m.t.flights[flightKey{model, m.t.tasks[c.task], c.repeat}]
	return f, ok
}

// rowAt is the row at the cursor.
func (t *table) rowAt(c cursor) (int, bool) {
	i, ok := t.cells[cellKey{c.task, c.group}][c.repeat]
	return i, ok
}

// cursorOf is where row i is in the table.
func (t *table) cursorOf(i int) cursor {
	for k, reps := range t.cells {
		for rep, j := range reps {
			if j == i {
				return cursor{task: k.task, group: k.group, repeat: rep}
			}
		}
	}
	return cursor{}
}

// order is the rows in the table's order: by task, group and repeat.
func (t *table) order() []int {
	var out []int
	for ti := range t.tasks {
		for gi := range t.groups {
			reps := t.cells[cellKey{ti, gi}]
			for rep := range t.repeats {
				if i, ok := reps[rep]; ok {
					out = append(out, i)
				}
			}
		}
	}
	return out
}

// caseAt names a place in the table by what is there, not by position.
type caseAt struct {
	label, task string
	repeat      int
}

func (m *Model) cursorCase() (caseAt, bool) {
	c := m.cur
	if c.group >= len(m.t.groups) || c.task >= len(m.t.tasks) {
		return caseAt{}, false
	}
	return caseAt{m.t.groups[c.group].Label, m.t.tasks[c.task], c.repeat}, true
}

func (m *Model) placeCursor(at caseAt) {
	gi := slices.IndexFunc(m.t.groups, func(g bench.RowGroup) bool { return g.Label == at.label })
	ti := slices.Index(m.t.tasks, at.task)
	if gi >= 0 && ti >= 0 {
		m.cur = cursor{task: ti, group: gi, repeat: at.repeat}
		m.clampCursor()
	}
}

func (m *Model) moveTask(d int) {
	m.cur.task += d
	m.clampCursor()
	m.clampScroll()
}

// moveMark steps one repeat, on to the next group's first (or the
// previous group's last) at a cell's end.
func (m *Model) moveMark(d int) {
	c := m.cur
	c.repeat += d
	switch {
	case c.repeat < 0 && c.group > 0:
		c.group--
		c.repeat = m.t.repeats - 1
	case c.repeat >= m.t.repeats && c.group < len(m.t.groups)-1:
		c.group++
		c.repeat = 0
	}
	m.cur = c
	m.clampCursor()
}

func (m *Model) clampCursor() {
	c := &m.cur
	c.task = max(0, min(c.task, len(m.t.tasks)-1))
	c.group = max(0, min(c.group, len(m.t.groups)-1))
	c.repeat = max(0, min(c.repeat, m.t.repeats-1))
}

// median of xs (not empty); xs is sorted in place.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// jsonNumber is x as a decoded JSON number, the form bench reads
// run.json's review_seconds in.
func jsonNumber(x float64) json.Number {
	return json.Number(strconv.FormatFloat(x, 'g', -1, 64))
}

// topFailure is a group's most frequent failure class and its count (ties
// in the order bench lists the classes), "" when none failed.
func topFailure(counts map[string]int) (string, int) {
	best, n := "", 0
	for _, c := range bench.FailureClasses {
		if counts[c] > n {
			best, n = c, counts[c]
		}
	}
	// A class this build does not know still counts.
	others := make([]string, 0, len(counts))
	for c := range counts {
		if !slices.Contains(bench.FailureClasses, c) {
			others = append(others, c)
		}
	}
	slices.Sort(others)
	for _, c := range others {
		if counts[c] > n {
			best, n = c, counts[c]
		}
	}
	return best, n
}

// openRegular opens path for reading when it is a regular file: a FIFO
// or a device named by a results file must not hang or flood the view.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", path)
	}
	if err != nil {
		_ = f.Close() // read-only
		return nil, err
	}
	return f, nil
}

// elapsed is d as a short duration ("2m10s", "1h05m").
func elapsed(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
