package fsops

import (
	"context"
	"fmt"
	"path"
	"sync"

	"github.com/dirtywork/dirtywork/sandbox"
)

// Budget keeps a tree within its caps (E-39). Host mode and the
// container's tool server both keep one.
//
// A full walk after every mutating file tool would cost tens of
// milliseconds on a large tree, while such a tool changes one file (and
// maybe creates its parent directories). So the totals of a full walk are
// kept, and a file tool adjusts them by what it changed: the file's
// allocated size before and after, and the directories it created. bash
// can change anything, so after bash the tree is walked again and the
// totals start over from that walk. Between walks the totals can drift
// by what a file tool cannot see, such as a directory's own blocks
// growing as entries are added; the next walk corrects it.
//
// The walks (the baseline when the workspace opens, and the one after
// each bash) run in the background while the model is asked for its next
// reply: on a large tree a walk takes tens of milliseconds. Every
// operation that can change the tree (a file tool that writes, bash) and
// Finalize first wait for the walk under way (settle), so nothing the
// worker changes next happens before its verdict, and a breach ends the
// run at that operation. Reads do not wait, since they change nothing,
// but they too end the run once a finished walk has found a breach
// (verdict). bash's processes are all dead by the time a walk starts, so
// the tree cannot change under it.
type Budget struct {
	fs     *FS
	limits Limits

	mu    sync.Mutex
	bytes int64
	files int64
	// long are the last walk's LongPaths.
	long []string

	// walk is the background walk under way, nil when none.
	walk *pendingWalk
	// breached is sticky: once a walk found a breach, every later
	// operation reports it.
	breached error
}

// pendingWalk is a background measurement.
type pendingWalk struct {
	done chan struct{}
	err  error
}

// NewBudget returns the budget of f's tree under limits (zero: no caps,
// totals only). Its totals are zero until a walk (StartWalk) sets them.
func NewBudget(f *FS, limits Limits) *Budget {
	return &Budget{fs: f, limits: limits}
}

// StartWalk measures the tree in the background; enforce applies the
// caps (after bash), otherwise the walk only sets the baseline.
func (b *Budget) StartWalk(ctx context.Context, enforce bool) {
	p := &pendingWalk{done: make(chan struct{})}
	b.mu.Lock()
	b.walk = p
	b.mu.Unlock()
	go func() {
		defer close(p.done)
		if enforce {
			p.err = b.check(ctx)
		} else {
			p.err = b.rebase(ctx)
		}
	}()
}

// Settle waits for the walk under way and returns what it found: a
// *sandbox.BudgetError for a breach (then and ever after), another error
// when the walk failed, or the context's error.
func (b *Budget) Settle(ctx context.Context) error {
	b.mu.Lock()
	p := b.walk
	b.mu.Unlock()
	if p != nil {
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return b.Verdict()
}

// Verdict folds in a walk that has finished, without waiting for one
// still under way, and returns the breach found so far, if any.
func (b *Budget) Verdict() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.walk; p != nil {
		select {
		case <-p.done:
			b.walk = nil
			if p.err != nil && b.breached == nil {
				b.breached = p.err
			}
		default:
		}
	}
	return b.breached
}

// rebase replaces the totals with a full walk's, with no caps applied.
func (b *Budget) rebase(ctx context.Context) error {
	m, err := b.fs.Measure(ctx, Limits{})
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.bytes, b.files, b.long = m.Bytes, m.Entries, m.LongPaths
	b.mu.Unlock()
	return nil
}

// LongPaths are the last walk's Measurement.LongPaths (see there).
func (b *Budget) LongPaths() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.long
}

// check walks the tree (after bash) and returns a *sandbox.BudgetError for
// a breach, including an unreadable directory.
func (b *Budget) check(ctx context.Context) error {
	m, err := b.fs.Measure(ctx, b.limits)
	if err != nil {
		return fmt.Errorf("measure worktree: %w", err)
	}
	if m.Violation != "" {
		return &sandbox.BudgetError{Reason: m.Violation}
	}
	// Without a breach the walk went to the end: its totals are whole.
	b.mu.Lock()
	b.bytes, b.files, b.long = m.Bytes, m.Entries, m.LongPaths
	b.mu.Unlock()
	return nil
}

// Change is what a file tool may alter, observed before it runs.
type Change struct {
	// rel is the root-relative path the tool writes, "" when the path is
	// refused (the tool then changes nothing).
	rel     string
	bytes   int64
	existed bool
	// created are rel's ancestors that did not exist yet, which a write
	// creates.
	created []string
}

// Before observes the entry a mutating file tool is about to write.
func (b *Budget) Before(given string) Change {
	f := b.fs
	rel, err := f.Resolve(given, true)
	if err != nil || rel == "." {
		return Change{}
	}
	c := Change{rel: rel}
	c.bytes, c.existed = f.StatBytes(rel)
	if !c.existed {
		for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
			if _, ok := f.StatBytes(dir); ok {
				break
			}
			c.created = append(c.created, dir)
		}
	}
	return c
}

// After adds what the tool changed to the totals and returns a
// *sandbox.BudgetError if they now breach a cap; the breach is kept, so
// every later Settle and Verdict report it too.
func (b *Budget) After(c Change) error {
	if c.rel == "" {
		return nil
	}
	f := b.fs
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, dir := range c.created {
		if n, ok := f.StatBytes(dir); ok {
			b.files++
			b.bytes += n
		}
	}
	n, exists := f.StatBytes(c.rel)
	b.bytes += n - c.bytes
	switch {
	case exists && !c.existed:
		b.files++
	case !exists && c.existed:
		b.files--
	}
	if reason := breach(b.limits, b.bytes, b.files); reason != "" {
		if b.breached == nil {
			b.breached = &sandbox.BudgetError{Reason: reason}
		}
		return b.breached
	}
	return nil
}

// Totals are the current byte and entry totals.
func (b *Budget) Totals() (bytes, files int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bytes, b.files
}

// breach is the cap the totals are past, in the contract's words (the
// same as fsops.Measure's), or "".
func breach(l Limits, bytes, files int64) string {
	switch {
	case l.MaxBytes > 0 && bytes > l.MaxBytes:
		return fmt.Sprintf("worktree exceeds %d MB", l.MaxBytes>>20)
	case l.MaxEntries > 0 && files > l.MaxEntries:
		return fmt.Sprintf("worktree exceeds %d entries", l.MaxEntries)
	}
	return ""
}
