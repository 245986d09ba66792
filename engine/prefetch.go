package engine

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider"
	"github.com/dirtywork/dirtywork/engine/tools"
	"github.com/dirtywork/dirtywork/gitops"
)

// prefetch is the loop's first model request, sent before Run: the
// conversation's first turn needs nothing of the sandbox but its path, so
// it goes out while the lane and the sandbox are made, and a model that
// answers at once is not kept waiting on them.
type prefetch struct {
	req     provider.Request
	started time.Time
	cancel  context.CancelFunc
	done    chan struct{}
	resp    provider.Response
	err     error
	// panicked is what the provider panicked with: the turn that takes
	// the answer panics with it, where a request of its own would have.
	panicked any

	mu sync.Mutex
	// onProgress, once Run took the request, is the turn's progress
	// reporter; until then progress is not reported.
	onProgress func(provider.Progress)
}

// Prefetch sends the request Run's first turn would send for system and
// task, now. Run takes its answer when it is called with the same system
// prompt and task (and otherwise drops it and asks anew); Discard drops it
// when Run is never called. The request is bounded by the run's timeout,
// counted from now: Run counts the run's deadline from here too.
func (l *Loop) Prefetch(ctx context.Context, system, task string) {
	l.Discard()
	hist := newHistory(l.ContextWindow)
	hist.add(provider.Message{Role: provider.RoleSystem, Content: system})
	hist.add(provider.Message{Role: provider.RoleUser, Content: task})
	if fits, _ := hist.trim(); !fits {
		return // the first turn ends the run without asking
	}
	pf := &prefetch{started: l.now(), done: make(chan struct{})}
	pctx, cancel := context.WithTimeout(ctx, max(time.Second, l.Timeout))
	pf.cancel = cancel
	pf.req = l.request(hist.msgs, pf.progress)
	l.first = pf
	go func() {
		defer close(pf.done)
		defer func() { pf.panicked = recover() }()
		pf.resp, pf.err = l.Provider.Chat(pctx, pf.req)
	}()
}

// Discard cancels a prefetched request Run did not take, and waits for it
// to end.
func (l *Loop) Discard() {
	pf := l.first
	if pf == nil {
		return
	}
	l.first = nil
	pf.cancel()
	<-pf.done
}

// request is the model request for msgs.
func (l *Loop) request(msgs []provider.Message, onProgress func(provider.Progress)) provider.Request {
	return provider.Request{
		Model:       l.Model,
		Messages:    append([]provider.Message(nil), msgs...),
		Tools:       tools.Schemas(),
		Temperature: l.Temperature,
		MaxTokens:   l.MaxTokens,
		Stream:      l.Stream,
		OnProgress:  onProgress,
	}
}

// take hands the prefetched request to Run when it is the one Run would
// send for msgs; otherwise it discards it and returns nil.
func (l *Loop) take(msgs []provider.Message) *prefetch {
	pf := l.first
	if pf == nil {
		return nil
	}
	same := slices.EqualFunc(pf.req.Messages, msgs, func(a, b provider.Message) bool {
		return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID &&
			len(a.ToolCalls) == 0 && len(b.ToolCalls) == 0
	})
	if !same {
		l.Discard()
		return nil
	}
	l.first = nil
	return pf
}

// progress is the prefetched request's OnProgress.
func (pf *prefetch) progress(p provider.Progress) {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if pf.onProgress != nil {
		pf.onProgress(p)
	}
}

// attach routes the request's progress to report from now on.
func (pf *prefetch) attach(report func(provider.Progress)) {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	pf.onProgress = report
}

// wait returns the prefetched answer, or ctx's error (the request
// cancelled) when ctx ends first.
func (pf *prefetch) wait(ctx context.Context) (provider.Response, error) {
	select {
	case <-pf.done:
	case <-ctx.Done():
		pf.cancel()
		<-pf.done
		if pf.panicked != nil {
			panic(pf.panicked)
		}
		if pf.err == nil {
			return pf.resp, nil // it arrived meanwhile
		}
		return provider.Response{}, ctx.Err()
	}
	pf.cancel()
	if pf.panicked != nil {
		panic(pf.panicked)
	}
	return pf.resp, pf.err
}

// dockerDisplayRoot is where the docker sandbox shows the tree to the
// model. The prefetched prompt is checked against the opened sandbox's
// root, so a sandbox that says otherwise costs only the early request.
const dockerDisplayRoot = "/work"

// firstTurn is what the first model request is made of besides the task:
// the repository's conventions at the run's base commit.
type firstTurn struct {
	base    string
	conv    gitops.Conventions
	convErr error
}

// firstTurn reads the conventions at base.
func (r *Runner) firstTurn(ctx context.Context, p *prepared, base string) *firstTurn {
	conv, err := gitops.ReadConventions(ctx, p.repo, base)
	return &firstTurn{base: base, conv: conv, convErr: err}
}

// prefetchFirst sends the loop's first request for the run in lane, when
// lane's base commit is known; nil when it is not yet.
func (r *Runner) prefetchFirst(ctx context.Context, p *prepared, lane gitops.Lane, loop *Loop) *firstTurn {
	if lane.BaseCommit == "" {
		return nil
	}
	root := dockerDisplayRoot
	if p.spec.Sandbox != "docker" {
		root = resolvedPath(lane.Worktree)
	}
	ft := r.firstTurn(ctx, p, lane.BaseCommit)
	loop.Prefetch(ctx, SystemPrompt(root, ft.conv.Name, ft.conv.Text, p.spec.AllowCommit), p.spec.Task)
	r.mark("prefetch")
	return ft
}

// resolvedPath is path with the symbolic links of its longest existing
// prefix resolved, as the host workspace resolves the worktree once it
// exists.
func resolvedPath(path string) string {
	dir, rest := filepath.Clean(path), ""
	for {
		if resolved, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(resolved, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return path
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}
