package provider

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// hinted is a transient failure carrying a Retry-After.
type hinted struct{ d time.Duration }

func (h hinted) Error() string                     { return "slow down" }
func (h hinted) RetryAfter() (time.Duration, bool) { return h.d, true }

// script returns an op failing with errs in turn, then succeeding.
func script(errs ...error) (op func(context.Context) (int, error), calls *int) {
	n := 0
	return func(context.Context) (int, error) {
		n++
		if n <= len(errs) {
			return 0, errs[n-1]
		}
		return n, nil
	}, &n
}

func recordSleeps(waits *[]time.Duration) func(context.Context, time.Duration) error {
	return func(_ context.Context, d time.Duration) error {
		*waits = append(*waits, d)
		return nil
	}
}

func TestRetryable(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"transient":        {&Error{Msg: "HTTP 503", Transient: true}, true},
		"wrapped":          {fmt.Errorf("chat: %w", &Error{Transient: true}), true},
		"not transient":    {&Error{Msg: "HTTP 400"}, false},
		"timeout":          {&Error{Transient: true, Timeout: true}, false},
		"overflow":         {&Error{Transient: true, ContextOverflow: true}, false},
		"cancelled":        {&Error{Transient: true, Err: context.Canceled}, false},
		"deadline":         {&Error{Transient: true, Err: context.DeadlineExceeded}, false},
		"not a provider's": {errors.New("boom"), false},
		"nil":              {nil, false},
	} {
		if got := Retryable(tc.err); got != tc.want {
			t.Errorf("%s: Retryable = %v", name, got)
		}
	}
}

func TestRetryBacksOffThenSucceeds(t *testing.T) {
	var waits []time.Duration
	var told []int
	op, calls := script(&Error{Transient: true}, &Error{Transient: true})
	v, err := Retry(t.Context(), RetryPolicy{
		Sleep:   recordSleeps(&waits),
		OnRetry: func(n int, _ error, _ time.Duration) { told = append(told, n) },
	}, op)
	if err != nil || v != 3 || *calls != 3 {
		t.Fatalf("v %d err %v after %d calls", v, err, *calls)
	}
	if !reflect.DeepEqual(waits, []time.Duration{time.Second, 2 * time.Second}) || !reflect.DeepEqual(told, []int{1, 2}) {
		t.Fatalf("waits %v, told %v", waits, told)
	}
}

func TestRetryGivesUp(t *testing.T) {
	last := &Error{Msg: "third", Transient: true}
	var waits []time.Duration
	op, calls := script(&Error{Transient: true}, &Error{Transient: true}, last, nil)
	_, err := Retry(t.Context(), RetryPolicy{Sleep: recordSleeps(&waits)}, op)
	if !errors.Is(err, last) || *calls != 3 {
		t.Fatalf("err %v after %d calls", err, *calls)
	}

	op, calls = script(&Error{Msg: "HTTP 400"})
	if _, err := Retry(t.Context(), RetryPolicy{Sleep: recordSleeps(&waits)}, op); err == nil || *calls != 1 {
		t.Fatalf("permanent failure: err %v after %d calls", err, *calls)
	}

	op, calls = script(&Error{Transient: true})
	if _, err := Retry(t.Context(), RetryPolicy{Attempts: 1}, op); err == nil || *calls != 1 {
		t.Fatalf("one attempt: err %v after %d calls", err, *calls)
	}
}

func TestRetryHonoursRetryAfterWithinBounds(t *testing.T) {
	for _, tc := range []struct {
		hint, bound, want time.Duration
	}{
		{5 * time.Second, 0, 5 * time.Second},
		{5 * time.Minute, 0, DefaultMaxRetryAfter},
		{5 * time.Minute, 10 * time.Second, 10 * time.Second},
		{0, 0, 0},
	} {
		var waits []time.Duration
		op, _ := script(&Error{Transient: true, Err: hinted{tc.hint}})
		if _, err := Retry(t.Context(), RetryPolicy{MaxRetryAfter: tc.bound, Sleep: recordSleeps(&waits)}, op); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(waits, []time.Duration{tc.want}) {
			t.Errorf("hint %v bound %v: waits %v", tc.hint, tc.bound, waits)
		}
	}
}

func TestRetryNeverWaitsPastTheDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	slept := false
	op, calls := script(&Error{Transient: true})
	_, err := Retry(ctx, RetryPolicy{
		Backoff: func(int) time.Duration { return time.Minute },
		Sleep:   func(context.Context, time.Duration) error { slept = true; return nil },
	}, op)
	if err == nil || slept || *calls != 1 {
		t.Fatalf("err %v, slept %v, %d calls", err, slept, *calls)
	}
}

func TestRetryStopsWhenCancelledWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	failure := &Error{Msg: "HTTP 503", Transient: true}
	op, calls := script(failure, failure)
	start := time.Now()
	_, err := Retry(ctx, RetryPolicy{
		Backoff: func(int) time.Duration { return time.Minute },
		OnRetry: func(int, error, time.Duration) { cancel() },
	}, op)
	if !errors.Is(err, failure) || *calls != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %d calls and %v", err, *calls, time.Since(start))
	}
}

func TestDefaultBackoff(t *testing.T) {
	var got []time.Duration
	for n := 0; n <= 6; n++ {
		got = append(got, DefaultBackoff(n))
	}
	want := []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("backoff = %v", got)
	}
}
