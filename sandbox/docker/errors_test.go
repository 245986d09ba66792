package docker

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// sentinels are the classes an error may fall in; a classified error
// matches exactly one of them.
var sentinels = []error{ErrNotFound, ErrConflict, ErrDaemonUnreachable, ErrTimedOut}

func assertClass(t *testing.T, err, want error) {
	t.Helper()
	for _, s := range sentinels {
		if got := errors.Is(err, s); got != errors.Is(want, s) {
			t.Errorf("errors.Is(%v, %v) = %v", err, s, got)
		}
	}
}

// The class comes from the daemon's status code (through the SDK's error
// types), never from its wording: a 404 with odd text is not found, a 500
// that says "No such image" is not.
func TestEngineErrorsAreClassifiedByType(t *testing.T) {
	tests := []struct {
		name string
		code int
		msg  string
		want error
	}{
		{"404", http.StatusNotFound, "something odd happened", ErrNotFound},
		{"409", http.StatusConflict, "No such image: worker", ErrConflict},
		{"500 worded like not found", http.StatusInternalServerError, "No such image: worker", nil},
		{"400", http.StatusBadRequest, "conflict", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := newFakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
				engineError(w, tt.code, tt.msg)
			})
			_, _, err := cl.ImageExists(t.Context(), "worker:1")
			if err == nil {
				t.Fatal("ImageExists succeeded against a refusing daemon")
			}
			assertClass(t, err, tt.want)
			if !strings.HasPrefix(err.Error(), "inspect image worker:1: ") || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not name the operation and keep the daemon's text %q", err, tt.msg)
			}
		})
	}
}

func TestUnreachableDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "nothing-listens.sock")
	cl, err := NewClient(Endpoint{Host: "unix://" + sock, Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.ServerVersion(t.Context())
	assertClass(t, err, ErrDaemonUnreachable)
	if !strings.Contains(err.Error(), sock) {
		t.Errorf("error %q does not name the endpoint", err)
	}
}

// A daemon that does not answer within the call's deadline is a timeout
// naming the limit, and still a deadline error underneath.
func TestHangingDaemonTimesOut(t *testing.T) {
	cl := newFakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
	})
	const limit = 200 * time.Millisecond
	err := call(t.Context(), "inspect image worker:1", limit, func(ctx context.Context) error {
		_, err := cl.api.ImageInspect(ctx, "worker:1")
		return err
	})
	assertClass(t, err, ErrTimedOut)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not wrap context.DeadlineExceeded", err)
	}
	if want := "inspect image worker:1: timed out after 200ms"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

// A read that times out once is tried once more: a busy daemon's late
// answer is not a failure; a daemon that stays silent is, naming both tries.
func TestReadTimingOutOnceIsTriedAgain(t *testing.T) {
	var calls atomic.Int32
	cl := newFakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			<-r.Context().Done() // the first try is not answered
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"Id":"sha256:1234"}`))
	})
	const limit = 200 * time.Millisecond
	err := callTwice(t.Context(), "inspect image worker:1", limit, func(ctx context.Context) error {
		_, err := cl.api.ImageInspect(ctx, "worker:1")
		return err
	})
	if err != nil || calls.Load() != 2 {
		t.Fatalf("after one timeout: %v (%d requests)", err, calls.Load())
	}

	silent := newFakeEngine(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	start := time.Now()
	err = callTwice(t.Context(), "inspect image worker:1", limit, func(ctx context.Context) error {
		_, err := silent.api.ImageInspect(ctx, "worker:1")
		return err
	})
	assertClass(t, err, ErrTimedOut)
	if want := "inspect image worker:1 (tried twice): timed out after 200ms"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %v", d)
	}
}

// Cancelled is not failed: a call the caller gave up on is
// context.Canceled, not a timeout or an unreachable daemon.
func TestCancelledCallIsNotATimeout(t *testing.T) {
	started := make(chan struct{})
	cl := newFakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	_, _, err := cl.ImageExists(ctx, "worker:1")
	assertClass(t, err, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%v does not wrap context.Canceled", err)
	}
}
