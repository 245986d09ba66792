package bench

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dirtywork/dirtywork/transcript/termsafe"
)

// Progress reports a sweep on stderr. On a terminal it redraws, once a
// second, a bar (cases done of all, passes so far, elapsed, an estimate of
// what is left) and a line per case in flight (model, task, repeat and
// the turn its transcript has reached); elsewhere it writes one plain line
// per scored case (B-4's) and nothing else. A nil Progress reports
// nothing.
type Progress struct {
	w   io.Writer
	tty bool
	now func() time.Time

	mu                          sync.Mutex
	total, skipped, done, passd int
	began                       time.Time
	flying                      []*flight // in the order they started
	drawn                       int       // lines of the last frame
	stop                        chan struct{}
	stopped                     chan struct{}
}

// NewProgress reports to w, redrawing when tty is set.
func NewProgress(w io.Writer, tty bool) *Progress {
	return &Progress{w: w, tty: tty, now: time.Now}
}

// flight is one case in flight: what the progress lines say of it.
type flight struct {
	label      string
	transcript string
}

// follow shows the turn the case's transcript at path has reached.
func (p *Progress) follow(f *flight, path string) {
	if p == nil || f == nil {
		return
	}
	p.mu.Lock()
	f.transcript = path
	p.mu.Unlock()
}

func (p *Progress) start(total, skipped int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.total, p.skipped, p.began = total, skipped, p.now()
	p.mu.Unlock()
	if skipped > 0 {
		p.line(fmt.Sprintf("resuming: %d of %d cases already scored", skipped, total))
	}
	if !p.tty {
		return
	}
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.redrawLocked()
				p.mu.Unlock()
			}
		}
	}()
}

func (p *Progress) finish() {
	if p == nil {
		return
	}
	if p.stop != nil {
		close(p.stop)
		<-p.stopped
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	if p.tty {
		fmt.Fprintln(p.w, p.barLocked())
	}
}

func (p *Progress) caseStarted(c benchCase) *flight {
	if p == nil {
		return nil
	}
	f := &flight{label: fmt.Sprintf("%s  %s  repeat %d", c.model.Model, c.task, c.repeat)}
	p.mu.Lock()
	p.flying = append(p.flying, f)
	p.mu.Unlock()
	return f
}

func (p *Progress) caseEnded(f *flight) {
	if p == nil || f == nil {
		return
	}
	p.mu.Lock()
	p.flying = slices.DeleteFunc(p.flying, func(g *flight) bool { return g == f })
	p.mu.Unlock()
}

// caseDone reports a scored case (B-4's line).
func (p *Progress) caseDone(r Row) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.done++
	if r.Passed() {
		p.passd++
	}
	p.mu.Unlock()
	p.line(fmt.Sprintf("%s  %s  repeat %d: %s / acceptance %s", r.Model, r.Task, r.Repeat, r.Status, r.Acceptance))
}

// note reports something beside the cases (a retry, a warning).
func (p *Progress) note(msg string) {
	if p != nil {
		p.line(msg)
	}
}

// line writes one line above the live frame. Worker-chosen names reach
// it (model ids, error texts): they are made inert first.
func (p *Progress) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	fmt.Fprintln(p.w, termsafe.Line(s))
	if p.tty {
		p.redrawLocked()
	}
}

func (p *Progress) barLocked() string {
	const width = 24
	total := max(1, p.total)
	finished := p.done + p.skipped
	filled := width * finished / total
	elapsed := p.now().Sub(p.began).Round(time.Second)
	eta := "?"
	if p.done > 0 {
		left := time.Duration(float64(p.now().Sub(p.began)) / float64(p.done) * float64(p.total-finished))
		eta = left.Round(time.Second).String()
	}
	return fmt.Sprintf("[%s%s] %d/%d cases  %d passed  elapsed %s  eta %s",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), finished, p.total, p.passd, elapsed, eta)
}

func (p *Progress) redrawLocked() {
	if !p.tty {
		return
	}
	p.clearLocked()
	var b bytes.Buffer
	b.WriteString(p.barLocked() + "\n")
	n := 1
	for _, f := range p.flying {
		turn := ""
		if t := lastTurn(f.transcript); t > 0 {
			turn = fmt.Sprintf("  turn %d", t)
		}
		b.WriteString("  " + termsafe.Line(f.label+turn) + "\n")
		n++
	}
	_, _ = p.w.Write(b.Bytes())
	p.drawn = n
}

// clearLocked erases the last frame (cursor up, clear to the end).
func (p *Progress) clearLocked() {
	if p.drawn > 0 {
		fmt.Fprintf(p.w, "\x1b[%dA\x1b[J", p.drawn)
		p.drawn = 0
	}
}

// turnField finds model_request turns in a transcript's tail.
var turnField = regexp.MustCompile(`"event": ?"model_request"[^\n]*?"turn": ?(\d+)|"turn": ?(\d+)[^\n]*?"event": ?"model_request"`)

// lastTurn is the turn of the last model_request in the transcript's last
// 8 KiB (0 when none or unreadable).
func lastTurn(path string) int {
	if path == "" {
		return 0
	}
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }() // read-only
	const tail = 8 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > tail {
		_, _ = f.Seek(fi.Size()-tail, io.SeekStart)
	}
	data, _ := io.ReadAll(io.LimitReader(f, tail))
	m := turnField.FindAllSubmatch(data, -1)
	if len(m) == 0 {
		return 0
	}
	last := m[len(m)-1]
	digits := last[1]
	if len(digits) == 0 {
		digits = last[2]
	}
	n, _ := strconv.Atoi(string(digits))
	return n
}
