package runs

import (
	"strings"
)

// ListRow is one run as `runs list` shows it: the 0.9.1 row (cells as
// strings, "-" for nothing), plus alive and what is left of the run.
type ListRow struct {
	Slug        string  `json:"slug"`
	Status      string  `json:"status"`
	Started     string  `json:"started"`
	Resumed     string  `json:"resumed"`
	Branch      string  `json:"branch"`
	Worktree    string  `json:"worktree"`
	Container   string  `json:"container"`
	Volume      string  `json:"volume"`
	ResumedFrom *string `json:"resumed_from"`
	ResumedBy   *string `json:"resumed_by"`
	Error       string  `json:"error,omitempty"`
	// Alive is true only while the run's process holds its liveness lock.
	Alive bool `json:"alive"`
	// Left is what exists of the run outside its run dir (null: unknown).
	Left LeftRow `json:"left"`
}

// LeftRow is Leftovers as JSON.
type LeftRow struct {
	Worktree  *bool    `json:"worktree"`
	Branch    *bool    `json:"branch"`
	Container *string  `json:"container"`
	Volume    *bool    `json:"volume"`
	Other     []string `json:"other_objects"`
}

// ListColumns are the columns of the text table, in order.
var ListColumns = []string{"slug", "status", "started", "resumed", "branch", "worktree", "container", "volume"}

// Row renders run as its list row. Leftovers must have been filled.
func Row(run *Run) ListRow {
	row := ListRow{Slug: run.Slug, Alive: run.Alive, Left: LeftRow{Other: []string{}}}
	if run.Err != nil {
		row.Status, row.Started, row.Resumed, row.Branch, row.Worktree, row.Container, row.Volume = "?", "?", "?", "?", "?", "?", "?"
		row.Error = run.Err.Error()
		return row
	}
	rec := &run.Record
	row.Status = dash(string(rec.Status))
	row.Started = dash(rec.Started)
	var resumed []string
	if from := Str(rec.ResumedFrom); from != "" {
		resumed = append(resumed, "from "+from)
	}
	if by := Str(rec.ResumedBy); by != "" {
		resumed = append(resumed, "by "+by)
	}
	row.Resumed = dash(strings.Join(resumed, ", "))
	row.ResumedFrom, row.ResumedBy = rec.ResumedFrom, rec.ResumedBy
	row.Branch = dash(rec.Branch)
	l := run.Leftovers
	if l == nil {
		l = &Leftovers{}
	}
	switch {
	case rec.Worktree == "":
		row.Worktree = "-"
	case l.Worktree == Present:
		row.Worktree = "yes"
	case l.Worktree == Absent:
		row.Worktree = "no"
	default:
		row.Worktree = "?"
	}
	row.Container = "-"
	if Str(rec.Container) != "" && l.Container != "" {
		row.Container = l.Container
	}
	switch {
	case Str(rec.Volume) == "":
		row.Volume = "-"
	case l.Volume == Present:
		row.Volume = "present"
	default:
		row.Volume = "absent" // a daemon that does not answer lists nothing (0.9.1)
	}
	row.Left.Worktree, row.Left.Branch, row.Left.Volume = l.Worktree.Bool(), l.Branch.Bool(), l.Volume.Bool()
	if l.Container != "" {
		c := l.Container
		row.Left.Container = &c
	}
	if l.OtherObjects != nil {
		row.Left.Other = l.OtherObjects
	}
	return row
}

// Cells are the row's text cells in ListColumns order.
func (r ListRow) Cells() []string {
	return []string{r.Slug, r.Status, r.Started, r.Resumed, r.Branch, r.Worktree, r.Container, r.Volume}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Table renders rows as R-2 tables: upper-cased header, cells padded to
// the column's width, two spaces between columns, trailing space cut.
func Table(header []string, rows [][]string) string {
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = len([]rune(h))
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], len([]rune(c)))
			}
		}
	}
	var b strings.Builder
	line := func(cells []string, upper bool) {
		var l strings.Builder
		for i, c := range cells {
			if upper {
				c = strings.ToUpper(c)
			}
			if i > 0 {
				l.WriteString("  ")
			}
			l.WriteString(c)
			if i < len(cells)-1 {
				l.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))))
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
	line(header, true)
	for _, r := range rows {
		line(r, false)
	}
	return b.String()
}
