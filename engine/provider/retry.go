package provider

import (
	"context"
	"errors"
	"time"
)

// Retry defaults: three tries in all, waiting 1 s then 2 s, and never
// waiting longer than 30 s for a server that asks for a pause.
const (
	DefaultRetryAttempts = 3
	DefaultMaxRetryAfter = 30 * time.Second
)

// RetryPolicy says how a transient failure (connection refused or reset,
// HTTP 429, 5xx) is retried. The zero value is the default policy.
type RetryPolicy struct {
	// Attempts is the number of tries including the first (0 means
	// DefaultRetryAttempts; 1 disables retrying).
	Attempts int
	// Backoff returns the wait before retry n (1-based). Nil means
	// DefaultBackoff.
	Backoff func(n int) time.Duration
	// MaxRetryAfter bounds a server's Retry-After (0 means
	// DefaultMaxRetryAfter).
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx ends. Nil means a timer; tests inject one
	// that records the waits and returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, when set, is told about each retry before its wait.
	OnRetry func(n int, err error, wait time.Duration)
}

// RetryHinter is implemented by errors that carry a server's requested
// pause (HTTP Retry-After).
type RetryHinter interface {
	// RetryAfter returns the pause the server asked for, if it asked.
	RetryAfter() (time.Duration, bool)
}

// DefaultBackoff doubles from one second: 1 s, 2 s, 4 s, ... capped at 8 s.
func DefaultBackoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	return time.Second << min(n-1, 3)
}

// Retryable reports whether err is a transient provider failure worth
// another try. Timeouts of the whole request and context overflows are
// never retried: the same request would fail the same way.
func Retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	pe, ok := AsError(err)
	return ok && pe.Transient && !pe.Timeout && !pe.ContextOverflow
}

// Retry runs op until it succeeds, fails for good, the policy's attempts
// are used up, or ctx ends. Each try gets ctx. A wait that would outlast
// ctx's deadline is not started: the last error is returned instead.
func Retry[T any](ctx context.Context, p RetryPolicy, op func(context.Context) (T, error)) (T, error) {
	attempts := p.Attempts
	if attempts <= 0 {
		attempts = DefaultRetryAttempts
	}
	for n := 1; ; n++ {
		v, err := op(ctx)
		if err == nil || n >= attempts || !Retryable(err) || ctx.Err() != nil {
			return v, err
		}
		wait := p.wait(n, err)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
			return v, err
		}
		if p.OnRetry != nil {
			p.OnRetry(n, err, wait)
		}
		if serr := p.sleep(ctx, wait); serr != nil {
			// Cancelled while waiting: the failure the caller can act on
			// is still the provider's.
			return v, err
		}
	}
}

// wait is the pause before retry n: the server's Retry-After when it sent
// one (bounded), else the backoff.
func (p RetryPolicy) wait(n int, err error) time.Duration {
	var hint RetryHinter
	if errors.As(err, &hint) {
		if d, ok := hint.RetryAfter(); ok {
			bound := p.MaxRetryAfter
			if bound <= 0 {
				bound = DefaultMaxRetryAfter
			}
			return min(max(d, 0), bound)
		}
	}
	if p.Backoff != nil {
		return p.Backoff(n)
	}
	return DefaultBackoff(n)
}

func (p RetryPolicy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
