package openai

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

func TestListModels(t *testing.T) {
	_, p, _ := serve(t, scripted.Script{Model: "qwen/qwen3-coder-next"})
	ids, err := p.ListModels(t.Context())
	if err != nil || !reflect.DeepEqual(ids, []string{"qwen/qwen3-coder-next"}) {
		t.Fatalf("models %v, %v", ids, err)
	}
}

func TestListModelsShapes(t *testing.T) {
	for name, tc := range map[string]struct {
		body string
		ids  []string
		err  string
	}{
		"vllm":            {fixture(t, "vllm_models.json"), []string{"Qwen/Qwen3-Coder-30B-A3B-Instruct"}, ""},
		"empty":           {`{"object":"list","data":[]}`, []string{}, ""},
		"no data":         {`{"object":"list"}`, nil, "(no data list)"},
		"data an object":  {`{"data":{"id":"m"}}`, nil, "(no data list)"},
		"numeric id":      {`{"data":[{"id":"a"},{"id":7}]}`, nil, "(data[1] has no string id)"},
		"entry a string":  {`{"data":["m"]}`, nil, "(data[0] has no string id)"},
		"not JSON":        {`<html>`, nil, "invalid JSON from "},
		"top-level array": {`[{"id":"m"}]`, nil, "(no data list)"},
	} {
		t.Run(name, func(t *testing.T) {
			origin, _ := fixtureServer(t, map[string]route{"GET /v1/models": {200, tc.body}})
			ids, err := New(testConfig(origin+"/v1", nil)).ListModels(t.Context())
			if tc.err != "" {
				if pe := mustError(t, err); !strings.Contains(pe.Error(), tc.err) {
					t.Fatalf("error %q, want it to contain %q", pe.Error(), tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(ids, tc.ids) {
				t.Fatalf("models %v, %v", ids, err)
			}
		})
	}
}

// deadlineRecorder fails every request, recording its URL and how long its
// context had left.
type deadlineRecorder struct {
	urls []string
	left []time.Duration
}

var errRecorded = errors.New("recorded, not sent")

func (d *deadlineRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	d.urls = append(d.urls, r.URL.String())
	left := time.Duration(-1)
	if dl, ok := r.Context().Deadline(); ok {
		left = time.Until(dl)
	}
	d.left = append(d.left, left)
	return nil, errRecorded
}

func TestListModelsIsBoundedByThePreflightTimeout(t *testing.T) {
	rec := &deadlineRecorder{}
	cfg := testConfig("http://fake/v1", nil)
	cfg.HTTPClient = &http.Client{Transport: rec}
	_, err := New(cfg).ListModels(t.Context())
	if !errors.Is(err, errRecorded) {
		t.Fatalf("error = %v", err)
	}
	if rec.urls[0] != "http://fake/v1/models" || rec.left[0] <= 9*time.Second || rec.left[0] > PreflightTimeout {
		t.Fatalf("GET %v with %v left", rec.urls, rec.left)
	}
}

func TestListModelsFailsFast(t *testing.T) {
	rec := &sleeps{}
	p := New(testConfig("http://127.0.0.1:1/v1", rec))
	_, err := p.ListModels(t.Context())
	if pe := mustError(t, err); !pe.Transient || !strings.HasPrefix(pe.Error(), "cannot reach http://127.0.0.1:1/v1/models: ") {
		t.Fatalf("error = %+v", pe)
	}
	if waits := rec.all(); len(waits) != 0 {
		t.Fatalf("preflight retried: waits %v", waits)
	}
}
