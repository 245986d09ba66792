package toolbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/fsops"
)

// job runs one decoded request and returns its result.
type job func(ctx context.Context) (any, error)

// errVersion is a hello from a client of another protocol version.
var errVersion = errors.New("protocol version mismatch")

// errGreeted is a second hello.
var errGreeted = errors.New("the server was greeted already")

// prepare decodes a request's arguments strictly and returns the job that
// answers it; an error is a bad request.
func (s *server) prepare(kind string, raw json.RawMessage) (job, error) {
	if len(raw) == 0 {
		return nil, errors.New("missing arguments")
	}
	if s.cfg.MeasureOnly && kind != kindHello && kind != kindMeasure {
		return nil, fmt.Errorf("%s: this server only measures", kind)
	}
	switch kind {
	case kindHello:
		var a helloArgs
		return decodeJob(raw, &a, func(ctx context.Context) (any, error) { return s.hello(ctx, a) })
	case kindReadFile:
		var a readFileArgs
		return decodeJob(raw, &a, func(context.Context) (any, error) {
			return text(s.fs.ReadFile(string(a.Path), a.Offset, a.Limit))
		})
	case kindWriteFile:
		var a writeFileArgs
		return decodeJob(raw, &a, func(ctx context.Context) (any, error) {
			return s.mutate(ctx, string(a.Path), func() (string, error) { return s.fs.WriteFile(string(a.Path), string(a.Content)) })
		})
	case kindEditFile:
		var a editFileArgs
		return decodeJob(raw, &a, func(ctx context.Context) (any, error) {
			return s.mutate(ctx, string(a.Path), func() (string, error) { return s.fs.EditFile(string(a.Path), string(a.Old), string(a.New)) })
		})
	case kindInsertText:
		var a insertTextArgs
		return decodeJob(raw, &a, func(ctx context.Context) (any, error) {
			return s.mutate(ctx, string(a.Path), func() (string, error) {
				return s.fs.InsertText(string(a.Path), string(a.Anchor), string(a.Text), a.After)
			})
		})
	case kindApplyEdits:
		var a applyEditsArgs
		return decodeJob(raw, &a, func(ctx context.Context) (any, error) {
			edits := make([]fsops.Edit, len(a.Edits))
			for i, e := range a.Edits {
				edits[i] = fsops.Edit{Old: string(e.Old), New: string(e.New)}
			}
			return s.mutate(ctx, string(a.Path), func() (string, error) { return s.fs.ApplyEdits(string(a.Path), edits) })
		})
	case kindListDir:
		var a listDirArgs
		return decodeJob(raw, &a, func(context.Context) (any, error) { return text(s.fs.ListDir(string(a.Path))) })
	case kindGrep:
		return s.prepareGrep(raw)
	case kindBash:
		return s.prepareBash(raw)
	case kindMeasure:
		return s.prepareMeasure(raw)
	case kindBudget:
		var a budgetArgs
		return decodeJob(raw, &a, s.budgetVerdict)
	case kindSweep:
		var a sweepArgs
		return decodeJob(raw, &a, func(ctx context.Context) (any, error) { return s.sweep(ctx, a) })
	case kindMark:
		var a markArgs
		return decodeJob(raw, &a, s.mark)
	case kindSeal:
		return s.prepareSeal(raw)
	case kindVerify:
		return s.prepareVerify(raw)
	}
	return nil, fmt.Errorf("unknown request kind %q", kind)
}

// decodeJob decodes raw into args and returns run, which reads them.
func decodeJob[A any](raw json.RawMessage, args *A, run job) (job, error) {
	if err := decodeStrict(raw, args); err != nil {
		return nil, fmt.Errorf("decode arguments: %w", err)
	}
	return run, nil
}

// text wraps a tool's text as its result.
func text(out string, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return textResult{Text: []byte(out)}, nil
}

func (s *server) prepareGrep(raw json.RawMessage) (job, error) {
	var a grepArgs
	if err := decodeStrict(raw, &a); err != nil {
		return nil, fmt.Errorf("decode arguments: %w", err)
	}
	if a.TimeoutMS < 0 || a.TimeoutMS > maxCommandTimeout.Milliseconds() {
		return nil, fmt.Errorf("timeout of %d ms is not in [0, %v]", a.TimeoutMS, maxCommandTimeout)
	}
	return func(ctx context.Context) (any, error) {
		timeout := time.Duration(a.TimeoutMS) * time.Millisecond
		return text(s.fs.Grep(ctx, string(a.Pattern), string(a.Path), string(a.Glob), timeout))
	}, nil
}

// maxCommandTimeout bounds bash's and grep's timeouts; the engine clamps
// them to 600 s, so anything near this is a confused client.
const maxCommandTimeout = 24 * time.Hour

func (s *server) prepareBash(raw json.RawMessage) (job, error) {
	var a bashArgs
	if err := decodeStrict(raw, &a); err != nil {
		return nil, fmt.Errorf("decode arguments: %w", err)
	}
	if a.TimeoutMS <= 0 || a.TimeoutMS > maxCommandTimeout.Milliseconds() {
		return nil, fmt.Errorf("timeout of %d ms is not in (0, %v]", a.TimeoutMS, maxCommandTimeout)
	}
	timeout := time.Duration(a.TimeoutMS) * time.Millisecond
	return func(ctx context.Context) (any, error) {
		b := s.currentBudget()
		if b != nil {
			_ = b.Settle(ctx) // the walk must not race the command; its verdict is kept
		}
		res, err := s.runBash(ctx, string(a.Command), timeout)
		if b != nil {
			// The tree is measured while the client reads the result;
			// a budget request waits for the verdict.
			b.StartWalk(context.WithoutCancel(ctx), true)
		}
		return res, err
	}, nil
}

// currentBudget is the budget the hello set up, nil before it.
func (s *server) currentBudget() *fsops.Budget {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.budget
}

// mutate runs a file tool that may change the entry at path, accounting
// the change against the budget (a breach is kept for the next budget
// request; the tool's text is the result either way).
func (s *server) mutate(ctx context.Context, path string, run func() (string, error)) (any, error) {
	b := s.currentBudget()
	if b == nil {
		return text(run())
	}
	_ = b.Settle(ctx) // a walk under way must not overwrite this tool's change
	c := b.Before(path)
	out, err := run()
	_ = b.After(c) // a breach is kept by the budget
	return text(out, err)
}

// budgetVerdict waits for the budget's walk under way and answers with
// the totals and the breach found, if any. Before the hello there is no
// budget: the totals are zero.
func (s *server) budgetVerdict(ctx context.Context) (any, error) {
	b := s.currentBudget()
	if b == nil {
		return measureResult{EscapingSymlinks: [][]byte{}}, nil
	}
	err := b.Settle(ctx)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	r := measureResult{EscapingSymlinks: [][]byte{}, LongPaths: [][]byte{}}
	r.Bytes, r.Entries = b.Totals()
	for _, p := range b.LongPaths() {
		r.LongPaths = append(r.LongPaths, []byte(p))
	}
	var be *sandbox.BudgetError
	switch {
	case errors.As(err, &be):
		r.Violation = []byte(be.Reason)
	case err != nil:
		return nil, err
	}
	return r, nil
}

func (s *server) prepareMeasure(raw json.RawMessage) (job, error) {
	var a measureArgs
	if err := decodeStrict(raw, &a); err != nil {
		return nil, fmt.Errorf("decode arguments: %w", err)
	}
	if a.MaxBytes < 0 || a.MaxEntries < 0 {
		return nil, fmt.Errorf("negative limits: %d bytes, %d entries", a.MaxBytes, a.MaxEntries)
	}
	return func(ctx context.Context) (any, error) {
		m, err := s.fs.Measure(ctx, fsops.Limits{MaxBytes: a.MaxBytes, MaxEntries: a.MaxEntries})
		if err != nil {
			return nil, err
		}
		return measured(m), nil
	}, nil
}

// measured is m as a reply, its escaping list cut to what a reply holds.
func measured(m fsops.Measurement) measureResult {
	r := measureResult{Bytes: m.Bytes, Entries: m.Entries, Violation: []byte(m.Violation), EscapingSymlinks: [][]byte{}, LongPaths: [][]byte{}}
	for _, p := range m.LongPaths {
		r.LongPaths = append(r.LongPaths, []byte(p))
	}
	size := 0
	for _, p := range m.EscapingSymlinks {
		if len(r.EscapingSymlinks) == maxEscapingListed || size+len(p) > maxEscapingListedBytes {
			r.EscapingTruncated = true
			break
		}
		size += len(p)
		r.EscapingSymlinks = append(r.EscapingSymlinks, []byte(p))
	}
	return r
}

// hello answers a client of this protocol version, and sets up the
// budget with its caps: the baseline walk starts at once.
func (s *server) hello(ctx context.Context, a helloArgs) (any, error) {
	if a.Version != ProtocolVersion {
		return nil, fmt.Errorf("%w: client speaks %d, server %d", errVersion, a.Version, ProtocolVersion)
	}
	if a.MaxBytes < 0 || a.MaxEntries < 0 {
		return nil, fmt.Errorf("negative limits: %d bytes, %d entries", a.MaxBytes, a.MaxEntries)
	}
	s.mu.Lock()
	if s.greeted {
		s.mu.Unlock()
		return nil, errGreeted
	}
	s.greeted = true
	s.budget = fsops.NewBudget(s.fs, fsops.Limits{MaxBytes: a.MaxBytes, MaxEntries: a.MaxEntries})
	s.budget.StartWalk(context.WithoutCancel(ctx), false)
	s.mu.Unlock()
	return helloResult{
		Version:  ProtocolVersion,
		PID:      os.Getpid(),
		UID:      os.Getuid(),
		GID:      os.Getgid(),
		Root:     []byte(s.fs.Display()),
		Dumpable: isDumpable(),
	}, nil
}
