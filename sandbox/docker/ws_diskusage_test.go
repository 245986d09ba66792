package docker

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
)

// duContainer is the container id the fake workspaces run in.
const duContainer = "c0ffee"

// engineLog records the requests a fake engine saw.
type engineLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *engineLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, r.Method+" "+r.URL.Path)
}

// kills counts the kills of the fake workspace's container.
func (l *engineLog) kills() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		if c == "POST /containers/"+duContainer+"/kill" {
			n++
		}
	}
	return n
}

// duWorkspace is a workspace on a fake engine, its container running,
// with a byte cap of maxBytes; the engine answers /system/df with df
// (nil: 500) and holds the events stream open until the client leaves.
func duWorkspace(t *testing.T, maxBytes int64, df func() any) (*Workspace, *engineLog) {
	t.Helper()
	log := &engineLog{}
	cl := newFakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		switch {
		case r.URL.Path == "/events":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.URL.Path == "/system/df" && df != nil:
			engineJSON(t, w, df())
		case r.URL.Path == "/system/df":
			engineError(w, http.StatusInternalServerError, "a disk usage operation is already running")
		case strings.HasSuffix(r.URL.Path, "/kill"):
			w.WriteHeader(http.StatusNoContent)
		default:
			engineError(w, http.StatusNotFound, "no such object")
		}
	})
	names, err := namesFor("unit-du")
	if err != nil {
		t.Fatal(err)
	}
	w := &Workspace{cl: cl, names: names, sess: &session{id: duContainer}}
	w.cfg.Slug = "unit-du"
	w.cfg.Limits = sandbox.Limits{MaxBytes: maxBytes}
	return w, log
}

// df1_41 is a /system/df answer as a 20.10 daemon (API 1.41) gives it:
// the type filter ignored, so images and layers come too, and every
// local volume sized.
func df1_41(volumes ...map[string]any) func() any {
	return func() any {
		return map[string]any{
			"LayersSize": 438559948, "Images": []any{}, "Containers": []any{}, "BuildCache": nil,
			"Volumes": append([]map[string]any{{
				"Name": "someone-elses", "Driver": "local", "Mountpoint": "/var/lib/docker/volumes/x/_data",
				"Scope": "local", "UsageData": map[string]any{"RefCount": 1, "Size": 1 << 40},
			}}, volumes...),
		}
	}
}

// sized is a volume entry of /system/df.
func sized(name string, size int64) map[string]any {
	return map[string]any{
		"Name": name, "Driver": "local", "Mountpoint": "/var/lib/docker/volumes/" + name + "/_data",
		"Scope": "local", "UsageData": map[string]any{"RefCount": 1, "Size": size},
	}
}

// The daemon's answer is read for the work volume alone: its size, -1
// when it has none or does not list it, and a refusal is an error naming
// the volume.
func TestVolumeSize(t *testing.T) {
	const vol = "dw-unit-du-work"
	noUsage := sized(vol, 0)
	delete(noUsage, "UsageData")
	cases := []struct {
		name    string
		df      func() any
		want    int64
		wantErr string
	}{
		{name: "listed", df: df1_41(sized(vol, 33554432)), want: 33554432},
		{name: "not sized", df: df1_41(sized(vol, -1)), want: -1},
		{name: "no usage data", df: df1_41(noUsage), want: -1},
		{name: "not listed", df: df1_41(), want: -1},
		{name: "refused", wantErr: "measure volume " + vol + ": " + "Error response from daemon: a disk usage operation is already running"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var query string
			cl := newFakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != "/system/df" {
					engineError(w, http.StatusNotFound, "unexpected "+r.Method+" "+r.URL.Path)
					return
				}
				query = r.URL.RawQuery
				if tc.df == nil {
					engineError(w, http.StatusInternalServerError, "a disk usage operation is already running")
					return
				}
				engineJSON(t, w, tc.df())
			})
			got, err := cl.volumeSize(t.Context(), vol)
			if query != "type=volume" {
				t.Errorf("query %q, want type=volume", query)
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("volumeSize = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// One check decides: over the cap records a budget violation and kills
// the container, as the tool server's measurement does; at or under it,
// a -1 and a failed query record nothing, and a failure is kept.
func TestVolumeCheckDecides(t *testing.T) {
	const maxBytes = 8 << 20
	errRefused := errors.New("a disk usage operation is already running")
	cases := []struct {
		name      string
		size      int64
		err       error
		violation string
	}{
		{name: "over the cap", size: maxBytes + 1, violation: "worktree exceeds 8 MB (the docker daemon measured the work volume at 8.0 MB)"},
		{name: "far over the cap", size: 32 << 20, violation: "worktree exceeds 8 MB (the docker daemon measured the work volume at 32.0 MB)"},
		{name: "at the cap", size: maxBytes},
		{name: "under the cap", size: 1 << 20},
		{name: "not sized", size: -1},
		{name: "query failed", size: -1, err: errRefused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, log := duWorkspace(t, maxBytes, nil)
			var asked string
			c := newVolumeCheck(w, time.Hour, func(ctx context.Context, name string) (int64, error) {
				asked = name
				if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > volumeCheckTimeout {
					t.Errorf("query deadline %v (set %v), want within %v", dl, ok, volumeCheckTimeout)
				}
				return tc.size, tc.err
			})
			recorded := c.check(t.Context())
			if asked != w.names.WorkVolume {
				t.Errorf("asked for volume %q, want %q", asked, w.names.WorkVolume)
			}
			if recorded != (tc.violation != "") {
				t.Errorf("check recorded %v", recorded)
			}
			n, lastErr := c.lastFailure()
			if !errors.Is(lastErr, tc.err) || (tc.err != nil) != (n == 1) {
				t.Errorf("failures %d, last %v; want %v", n, lastErr, tc.err)
			}
			v := w.currentViolation()
			if tc.violation == "" {
				if v != nil || log.kills() != 0 {
					t.Fatalf("violation %+v and %d kills, want neither", v, log.kills())
				}
				if _, err := w.current(); err != nil {
					t.Errorf("the next call: %v", err)
				}
				return
			}
			if v == nil || v.Reason != tc.violation || v.Kind != kindBudget {
				t.Fatalf("violation %+v, want %q kind %s", v, tc.violation, kindBudget)
			}
			if log.kills() != 1 {
				t.Errorf("%d kills of the container, want 1", log.kills())
			}
			var be *sandbox.BudgetError
			if _, err := w.current(); !errors.As(err, &be) || be.Reason != tc.violation {
				t.Errorf("the next call: %v, want the budget error", err)
			}
		})
	}
}

// Answers without a size stop the run only once the daemon had measured
// the volume, and only when unmeasuredLimit of them come in a row: a
// worker that makes the daemon's walk fail does not run on unmeasured,
// while a daemon that never sizes the volume, or a one-off gap, stops
// nothing.
func TestVolumeCheckUnmeasurable(t *testing.T) {
	cases := []struct {
		name  string
		sizes []int64
		stops bool
	}{
		{"never sized", []int64{-1, -1, -1, -1}, false},
		{"one gap", []int64{1 << 20, -1, 1 << 20, -1, 2 << 20}, false},
		{"sized, then not", []int64{1 << 20, -1, -1}, true},
		{"first answers unsized, then sized, then not", []int64{-1, -1, 1 << 20, -1, -1}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, log := duWorkspace(t, 8<<20, nil)
			i := 0
			c := newVolumeCheck(w, time.Hour, func(context.Context, string) (int64, error) {
				i++
				return tc.sizes[i-1], nil
			})
			stopped := false
			for range tc.sizes {
				if c.check(t.Context()) {
					stopped = true
					break
				}
			}
			if stopped != tc.stops || i != len(tc.sizes) {
				t.Fatalf("stopped %v after %d answers, want %v after %d", stopped, i, tc.stops, len(tc.sizes))
			}
			v := w.currentViolation()
			if !tc.stops {
				if v != nil {
					t.Fatalf("violation %+v", v)
				}
				return
			}
			if v == nil || v.Kind != kindBudget || !strings.Contains(v.Reason, "can no longer measure the work volume") || log.kills() != 1 {
				t.Fatalf("violation %+v, %d kills", v, log.kills())
			}
		})
	}
}

// A watchdog failure is replaced by the budget breach, as W-4 asks.
func TestVolumeCheckReplacesWatchdogFailure(t *testing.T) {
	w, _ := duWorkspace(t, 1<<20, nil)
	w.violation = &violation{Reason: "watchdog: broken", Kind: kindSandbox}
	c := newVolumeCheck(w, time.Hour, func(context.Context, string) (int64, error) { return 2 << 20, nil })
	c.check(t.Context())
	if v := w.currentViolation(); v.Kind != kindBudget || !strings.HasPrefix(v.Reason, "worktree exceeds 1 MB") {
		t.Errorf("violation %+v, want the budget breach", v)
	}
}

// Without a byte cap there is nothing to check.
func TestVolumeCheckNeedsCap(t *testing.T) {
	w, _ := duWorkspace(t, 0, nil)
	if c := newVolumeCheck(w, time.Second, nil); c != nil {
		t.Errorf("a check without a byte cap: %+v", c)
	}
}

// The loop asks once per period and never while a query runs; failures
// and unsized answers let it go on, a success clears the failure count,
// and a breach ends it.
func TestVolumeCheckLoop(t *testing.T) {
	w, _ := duWorkspace(t, 8<<20, nil)
	errRefused := errors.New("refused")
	release := make(chan struct{})
	answers := []func() (int64, error){
		func() (int64, error) { <-release; return 1 << 20, nil }, // slow
		func() (int64, error) { return -1, errRefused },
		func() (int64, error) { return -1, nil },
		func() (int64, error) { return 2 << 20, nil },
		func() (int64, error) { return 9 << 20, nil },
	}
	var calls, inFlight atomic.Int32
	var after [5]struct {
		failures int
		err      error
	}
	var c *volumeCheck
	c = newVolumeCheck(w, 5*time.Millisecond, func(ctx context.Context, _ string) (int64, error) {
		if inFlight.Add(1) > 1 {
			t.Error("a query started while another ran")
		}
		defer inFlight.Add(-1)
		i := int(calls.Add(1)) - 1
		if i > 0 {
			after[i-1].failures, after[i-1].err = c.lastFailure()
		}
		if i >= len(answers) {
			t.Errorf("query %d after the breach", i+1)
			return -1, nil
		}
		return answers[i]()
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(t.Context())
	}()
	// While the first query hangs, many periods pass without another.
	time.Sleep(100 * time.Millisecond)
	if n := calls.Load(); n != 1 {
		t.Errorf("%d queries while the first ran, want 1", n)
	}
	close(release)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the loop did not end at the breach within 5 s")
	}
	if n := calls.Load(); n != int32(len(answers)) {
		t.Errorf("%d queries, want %d", n, len(answers))
	}
	// The state each query found: after the refusal one failure, cleared
	// by the next answer, sized or not (the query worked).
	if after[1].failures != 1 || !errors.Is(after[1].err, errRefused) || after[2].failures != 0 || after[3].failures != 0 {
		t.Errorf("failure state between queries: %+v", after)
	}
	if v := w.currentViolation(); v == nil || !strings.HasPrefix(v.Reason, "worktree exceeds 8 MB") {
		t.Errorf("violation %+v", v)
	}
}

// The loop ends with its context and does not record a cancelled query.
func TestVolumeCheckStops(t *testing.T) {
	w, _ := duWorkspace(t, 8<<20, nil)
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	c := newVolumeCheck(w, time.Millisecond, func(ctx context.Context, _ string) (int64, error) {
		close(started)
		<-ctx.Done()
		return -1, ctx.Err()
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(ctx)
	}()
	<-started
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the loop did not stop within 5 s of its context")
	}
	if n, err := c.lastFailure(); n != 0 || err != nil {
		t.Errorf("a cancelled query was kept as a failure: %d, %v", n, err)
	}
}

// The watchdog runs the check against the daemon with no tool server at
// all: a work volume the daemon finds over the cap stops the run.
func TestWatchdogChecksVolume(t *testing.T) {
	defer func(every time.Duration) { volumeCheckEvery = every }(volumeCheckEvery)
	volumeCheckEvery = 10 * time.Millisecond
	w, log := duWorkspace(t, 8<<20, df1_41(sized("dw-unit-du-work", 32<<20)))
	d := startWatchdog(w)
	deadline := time.Now().Add(5 * time.Second)
	for w.currentViolation() == nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	d.stop()
	v := w.currentViolation()
	if v == nil || v.Kind != kindBudget || v.Reason != "worktree exceeds 8 MB (the docker daemon measured the work volume at 32.0 MB)" {
		t.Fatalf("violation %+v within 5 s", v)
	}
	if log.kills() != 1 {
		t.Errorf("%d kills of the container, want 1", log.kills())
	}
}
