package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// sameLines compares what two reads of a results file found, line by
// line: rows (typed fields, line numbers and the objects as written) and
// problems (line numbers and causes).
func sameLines(rowsA, rowsB []Row, probsA, probsB []LineError) bool {
	if len(rowsA) != len(rowsB) || len(probsA) != len(probsB) || !reflect.DeepEqual(rowsA, rowsB) {
		return false
	}
	for i := range probsA {
		if probsA[i].Line != probsB[i].Line || probsA[i].Err.Error() != probsB[i].Err.Error() {
			return false
		}
	}
	return true
}

// typedOnly is r without what reading adds: its line and its object as
// written.
func typedOnly(r Row) Row {
	r.Line, r.raw = 0, nil
	return r
}

// FuzzReadResults writes arbitrary bytes as a results file and reads them
// as ReadResults does. It never panics; every non-blank line is a row or
// a problem, numbered as the file numbers it, in file order; a file read
// as a whole or as a head and a tail read later (numbered from where the
// tail starts, as a sweep's follower reads it) gives the same rows and
// problems; and every row, written again as AppendRow writes it, reads
// back as the same typed row.
func FuzzReadResults(f *testing.F) {
	names, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil || len(names) == 0 {
		f.Fatalf("no results fixtures: %v", err)
	}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint16(len(data)/2))
	}
	full, err := scoredRow().MarshalJSON()
	if err != nil {
		f.Fatal(err)
	}
	errRow, err := (Row{Model: "m", Task: "t", Status: StatusBenchError, Error: ptr("boom"), Acceptance: AcceptanceSkipped}).MarshalJSON()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(full) + "\n" + string(errRow) + "\n",
		string(full) + "\n" + string(full[:len(full)/2]), // a sweep killed mid-write
		"\n  \n\t\r\n" + string(errRow) + "\r\n[1]\nnull\n{\"a\":1} {}\n",
		`{"model":"m","Model":"M","repeat":1.0,"turns":"3","wall_s":1e400,"review_seconds":-0.0,"harness":{"x":1},"serving":{},"time":{"decode_s":true}}`,
		`{"status":"bench_error","trimmed_turns":2,"harness":{}}`,
		`{"repeat":99999999999999999999,"fix_round":-1,"verdict":null,"provider":"openai","base_url":"http://127.0.0.1:1234/v1"}`,
		"",
	} {
		f.Add([]byte(s), uint16(len(s)/3))
	}
	dir := f.TempDir()
	path := filepath.Join(dir, "results.jsonl")
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := ReadResults(path)
		if err != nil {
			t.Fatalf("ReadResults: %v", err)
		}
		if res.Path != path {
			t.Fatalf("path %q", res.Path)
		}
		lines := bytes.Split(data, []byte("\n"))
		nonBlank := 0
		for _, l := range lines {
			if len(bytes.TrimSpace(l)) > 0 {
				nonBlank++
			}
		}
		if len(res.Rows)+len(res.Problems) != nonBlank {
			t.Fatalf("%d rows and %d problems from %d non-blank lines", len(res.Rows), len(res.Problems), nonBlank)
		}
		last := 0
		ri, pi := 0, 0
		for ri < len(res.Rows) || pi < len(res.Problems) {
			var n int
			if pi == len(res.Problems) || ri < len(res.Rows) && res.Rows[ri].Line < res.Problems[pi].Line {
				n = res.Rows[ri].Line
				ri++
			} else {
				p := res.Problems[pi]
				pi++
				n = p.Line
				if p.Err == nil || len(bytes.TrimSpace(lines[n-1])) == 0 {
					t.Fatalf("problem %+v on line %q", p, lines[n-1])
				}
			}
			if n <= last || n > len(lines) {
				t.Fatalf("line number %d after %d, of %d lines", n, last, len(lines))
			}
			last = n
		}

		// A head, then the tail read later from its first line's number.
		cut := 0
		if len(data) > 0 {
			cut = int(split) % (len(data) + 1)
			if i := bytes.IndexByte(data[cut:], '\n'); i >= 0 {
				cut += i + 1
			} else {
				cut = len(data)
			}
		}
		headRows, headProbs := ParseLines(data[:cut], 1)
		tailRows, tailProbs := ParseLines(data[cut:], 1+bytes.Count(data[:cut], []byte("\n")))
		if !sameLines(append(headRows, tailRows...), res.Rows, append(headProbs, tailProbs...), res.Problems) {
			t.Fatalf("read in two parts at byte %d: %+v %v\nwhole: %+v %v", cut,
				append(headRows, tailRows...), append(headProbs, tailProbs...), res.Rows, res.Problems)
		}

		for _, r := range res.Rows {
			line, err := json.Marshal(r)
			if err != nil {
				t.Fatalf("row of line %d does not encode: %v", r.Line, err)
			}
			back, err := decodeRow(line)
			if err != nil {
				t.Fatalf("row of line %d encodes to %s, which does not read: %v", r.Line, line, err)
			}
			want := typedOnly(r)
			if r.Status == StatusBenchError {
				want.TrimmedTurns = nil // a bench_error row is written without it
			}
			if got := typedOnly(back); !reflect.DeepEqual(got, want) {
				t.Fatalf("row of line %d written as %s reads back as\n%+v\nwas\n%+v", r.Line, line, got, want)
			}
			_ = r.Case()
			_ = r.Extended()
		}
	})
}

// servingRoutes are the requests ProbeServer makes for the model "qwen",
// in the order FuzzProbeServer's bodies answer them.
var servingRoutes = []string{
	"GET /props", "GET /api/v0/models/qwen", "GET /api/version", "POST /api/show", "GET /v1/models", "GET /version",
}

// servingServer answers ProbeServer's requests with the current
// iteration's bodies: 404 for an empty one.
type servingServer struct {
	mu     sync.Mutex
	bodies map[string][]byte
}

func (s *servingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	body := s.bodies[r.Method+" "+r.URL.Path]
	s.mu.Unlock()
	if len(body) == 0 {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// statedLengths are the context lengths a server's answers could state:
// every JSON number in them, and every number after a num_ctx, cut to a
// whole number as an int field takes it.
func statedLengths(bodies [][]byte) map[int]bool {
	out := map[int]bool{0: true}
	addFloat := func(f float64) {
		if !math.IsNaN(f) && math.Abs(f) < 1<<62 {
			out[int(f)] = true
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case json.Number:
			if f, err := strconv.ParseFloat(string(x), 64); err == nil {
				addFloat(f)
			}
		case string:
			for _, line := range strings.Split(x, "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "num_ctx" {
					digits := strings.TrimLeft(f[1], "+-0123456789")
					if n, err := strconv.Atoi(strings.TrimSuffix(f[1], digits)); err == nil {
						out[n] = true
					}
				}
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, b := range bodies {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil {
			walk(v)
		}
	}
	return out
}

// FuzzProbeServer serves arbitrary answers to the questions a sweep asks
// a model server about itself (llama.cpp's /props, LM Studio's
// /api/v0/models/<model>, Ollama's /api/version and /api/show, the
// /v1/models list and vLLM's /version) from one local server. ProbeServer
// never panics, names a dialect it knows, records a context length only
// as a number the answers state (never one made up by a conversion), and
// records the same server the same way twice.
func FuzzProbeServer(f *testing.F) {
	none := []byte{}
	j := func(v any) []byte {
		data, err := json.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		return data
	}
	// The dialects of TestProbeServerDialects.
	f.Add(j(map[string]any{
		"default_generation_settings": map[string]any{"n_ctx": 16384},
		"total_slots":                 4, "build_info": "b5000-abc", "model_path": "/models/qwen2.5-coder-7b-instruct-q4_k_m.gguf",
	}), none, none, none, none, none)
	f.Add(none, j(map[string]any{"id": "qwen", "quantization": "Q8_0", "max_context_length": 32768, "loaded_context_length": 8192}), none, none, none, none)
	f.Add(none, none, j(map[string]any{"version": "0.9.0"}), j(map[string]any{
		"details":    map[string]any{"quantization_level": "Q4_0"},
		"model_info": map[string]any{"general.architecture": "qwen2", "qwen2.context_length": 32768},
		"parameters": "stop \"<|im_end|>\"\nnum_ctx 8192",
	}), none, none)
	f.Add(none, none, j(map[string]any{"version": "0.9.0"}), j(map[string]any{"model_info": map[string]any{"qwen2.context_length": 32768}}), none, none)
	f.Add(none, none, none, none, j(map[string]any{"data": []any{map[string]any{"id": "qwen", "owned_by": "vllm", "max_model_len": 32768}}}), j(map[string]any{"version": "0.8.5"}))
	f.Add(none, none, none, none, j(map[string]any{"data": []any{map[string]any{"id": "qwen", "owned_by": "me"}}}), none)
	f.Add(none, none, none, none, none, none)
	srv := &servingServer{}
	ts := httptest.NewServer(srv)
	f.Cleanup(ts.Close)
	hc := &http.Client{Timeout: 10 * time.Second}
	known := map[string]bool{"llama.cpp": true, "lmstudio": true, "ollama": true, "vllm": true, "openai-compatible": true}
	f.Fuzz(func(t *testing.T, props, lmstudio, version, show, models, vllmVersion []byte) {
		bodies := [][]byte{props, lmstudio, version, show, models, vllmVersion}
		srv.mu.Lock()
		srv.bodies = map[string][]byte{}
		for i, route := range servingRoutes {
			srv.bodies[route] = bodies[i]
		}
		srv.mu.Unlock()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		got := ProbeServer(ctx, hc, "openai", ts.URL+"/v1", "qwen")
		again := ProbeServer(ctx, hc, "openai", ts.URL+"/v1", "qwen")
		if ctx.Err() != nil {
			t.Fatalf("the probes did not end within their deadline: a hang")
		}
		if !known[got.Server] {
			t.Fatalf("server %q", got.Server)
		}
		if !statedLengths(bodies)[got.ContextLength] {
			t.Fatalf("context length %d, which no answer states: %+v", got.ContextLength, got)
		}
		if again != got {
			t.Fatalf("the same answers probed twice: %+v, then %+v", got, again)
		}
	})
}
