package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Summary is what `bench summarize` reports on one results file, or on two
// with --compare. Its JSON form (WriteJSON) is one object:
//
//	file      the file summarized (A with --compare), as given
//	compare   the other file (B), only with --compare
//	problems  [{file, line, error}]: lines that were not rows, skipped
//	a         the first file's Side
//	b         the other file's Side, only with --compare
//	paired    [Paired]: per group, both sides' rates and the exact McNemar
//	          test over the cases in both, only with --compare
//
// A Side is {file, rows, extended, models, cases, groups}: extended says
// whether a row carries this build's keys; models are the original's
// per-model statistics (LegacyStats and model), cases its per model and
// task statistics (LegacyStats, model and task), groups this build's
// statistics (GroupStats) per model and serving setup.
type Summary struct {
	File     string    `json:"file"`
	Compare  string    `json:"compare,omitempty"`
	Problems []Problem `json:"problems"`
	A        Side      `json:"a"`
	B        *Side     `json:"b,omitempty"`
	Paired   []Paired  `json:"paired,omitempty"`

	entriesA, entriesB []entry
}

// Problem is a line of a results file that was not a row.
type Problem struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Error string `json:"error"`
}

// Side is the summary of one results file.
type Side struct {
	File     string       `json:"file"`
	Rows     int          `json:"rows"`
	Extended bool         `json:"extended"`
	Models   []ModelStats `json:"models"`
	Cases    []CaseStats  `json:"cases"`
	Groups   []GroupStats `json:"groups"`
}

// ModelStats is the original's statistics of one model's rows.
type ModelStats struct {
	Model string `json:"model"`
	LegacyStats
}

// CaseStats is the original's statistics of one model's rows of one task.
type CaseStats struct {
	Model string `json:"model"`
	Task  string `json:"task"`
	LegacyStats
}

// Summarize summarizes results a, and compares it with b when b is not
// nil. lookup reads verdicts live from the runs' records (nil: the rows'
// own verdicts only).
func Summarize(a, b *Results, lookup VerdictLookup) *Summary {
	s := &Summary{File: a.Path, Problems: problems(a, b)}
	s.entriesA = newEntries(a.Rows, lookup)
	s.A = side(a, s.entriesA)
	if b != nil {
		s.Compare = b.Path
		s.entriesB = newEntries(b.Rows, lookup)
		sb := side(b, s.entriesB)
		s.B = &sb
		s.Paired = pairedStats(s.entriesA, s.entriesB, s.A.Groups, sb.Groups)
	}
	return s
}

func problems(files ...*Results) []Problem {
	out := []Problem{}
	for _, f := range files {
		if f == nil {
			continue
		}
		for _, p := range f.Problems {
			out = append(out, Problem{File: f.Path, Line: p.Line, Error: p.Err.Error()})
		}
	}
	return out
}

func side(r *Results, es []entry) Side {
	sd := Side{File: r.Path, Rows: len(r.Rows), Models: []ModelStats{}, Cases: []CaseStats{}}
	for i := range r.Rows {
		sd.Extended = sd.Extended || r.Rows[i].Extended()
	}
	models, byModel := groupEntries(es, modelOf, strings.Compare)
	for _, m := range models {
		sd.Models = append(sd.Models, ModelStats{Model: m, LegacyStats: legacyStats(byModel[m])})
	}
	cases, byCase := groupEntries(es, modelTaskOf, compareModelTask)
	for _, c := range cases {
		sd.Cases = append(sd.Cases, CaseStats{Model: c.Model, Task: c.Task, LegacyStats: legacyStats(byCase[c])})
	}
	sd.Groups = groupStats(es)
	return sd
}

// WriteText prints the summary as the original does (byte for byte for
// its files: the plain summary, or the two compare tables), followed, when
// a file's rows carry this build's keys, by this build's statistics (the
// paired tests with --compare).
func (s *Summary) WriteText(w io.Writer) error {
	// Tables go out a cell at a time: buffer them.
	bw := bufio.NewWriter(w)
	ew := &errWriter{w: bw}
	if s.B == nil {
		writeLegacyPlain(ew, s.entriesA, s.A.Models)
		if s.A.Extended {
			writeGroups(ew, s.A.Groups)
		}
	} else {
		writeLegacyCompare(ew, &s.A, s.B)
		if s.A.Extended || s.B.Extended {
			fmt.Fprintln(ew)
			writePaired(ew, s.Paired)
		}
	}
	if ew.err != nil {
		return ew.err
	}
	return bw.Flush()
}

// WriteJSON prints the summary as one JSON object and a newline.
func (s *Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(s)
}

// errWriter keeps the first write error, so printing goes on unchecked
// and the error is reported once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
