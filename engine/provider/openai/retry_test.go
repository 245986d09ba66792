package openai

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

// statuses lists the statuses the scripted server answered p with.
func statuses(t *testing.T, srv *scripted.Server, p *Provider) []int {
	t.Helper()
	var out []int
	for _, r := range requests(t, srv, p) {
		out = append(out, r.Status)
	}
	return out
}

func TestTransientFailuresAreRetried(t *testing.T) {
	srv, p, rec := serve(t, scripted.Script{Turns: []scripted.Turn{{
		Text:   "recovered",
		Errors: []scripted.HTTPError{{Status: 503}, {Status: 503}},
	}}})
	resp, err := p.Chat(t.Context(), ask())
	if err != nil || resp.Text != "recovered" {
		t.Fatalf("chat: %v %+v", err, resp)
	}
	if got := statuses(t, srv, p); !reflect.DeepEqual(got, []int{503, 503, 200}) {
		t.Fatalf("statuses = %v", got)
	}
	if got := rec.all(); !reflect.DeepEqual(got, []time.Duration{time.Second, 2 * time.Second}) {
		t.Fatalf("waits = %v", got)
	}
}

func TestRetriesStopAfterThreeTries(t *testing.T) {
	srv, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{
		Text:   "never",
		Errors: []scripted.HTTPError{{Status: 500}, {Status: 502}, {Status: 503}},
	}}})
	_, err := p.Chat(t.Context(), ask())
	pe := mustError(t, err)
	if pe.StatusCode != 503 || !pe.Transient || !strings.HasPrefix(pe.Error(), "HTTP 503 on ") {
		t.Fatalf("error = %+v", pe)
	}
	if got := statuses(t, srv, p); !reflect.DeepEqual(got, []int{500, 502, 503}) {
		t.Fatalf("statuses = %v", got)
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusUnprocessableEntity} {
		srv, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{
			Text:   "unreached",
			Errors: []scripted.HTTPError{{Status: status, Body: `{"error":{"message":"invalid tool schema"}}`}},
		}}})
		_, err := p.Chat(t.Context(), ask())
		pe := mustError(t, err)
		if pe.StatusCode != status || pe.Transient || pe.ContextOverflow {
			t.Errorf("HTTP %d: error = %+v", status, pe)
		}
		if got := statuses(t, srv, p); len(got) != 1 {
			t.Errorf("HTTP %d: statuses = %v", status, got)
		}
	}
}

func TestTooManyRequestsHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   time.Duration
	}{
		{"7", 7 * time.Second},
		{"3600", 30 * time.Second}, // bounded
		{"soon", time.Second},      // unreadable: the backoff
	} {
		srv, p, rec := serve(t, scripted.Script{Turns: []scripted.Turn{{
			Text:   "ok",
			Errors: []scripted.HTTPError{{Status: http.StatusTooManyRequests, RetryAfter: tc.header}},
		}}})
		resp, err := p.Chat(t.Context(), ask())
		if err != nil || resp.Text != "ok" {
			t.Fatalf("Retry-After %q: %v", tc.header, err)
		}
		if got := rec.all(); !reflect.DeepEqual(got, []time.Duration{tc.want}) {
			t.Errorf("Retry-After %q: waits = %v, want [%v]", tc.header, got, tc.want)
		}
		if got := statuses(t, srv, p); !reflect.DeepEqual(got, []int{429, 200}) {
			t.Errorf("statuses = %v", got)
		}
	}
}

func TestParseRetryAfterDate(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	d, ok := parseRetryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now)
	if !ok || d != 90*time.Second {
		t.Fatalf("date: %v %v", d, ok)
	}
	if d, ok := parseRetryAfter(now.Add(-time.Minute).Format(http.TimeFormat), now); !ok || d != 0 {
		t.Fatalf("past date: %v %v", d, ok)
	}
	if _, ok := parseRetryAfter("-3", now); ok {
		t.Fatal("negative seconds accepted")
	}
}
