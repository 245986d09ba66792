package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/policy"
)

// fuzzToolNames are the names a fuzzed call picks from: the ten tools and
// two the registry does not know.
var fuzzToolNames = append(append([]string{}, Names...), "frobnicate", "")

// decodeFuzzArgs decodes a call's arguments text as the providers do: one
// JSON value, numbers kept as json.Number, nothing after it, and an object.
func decodeFuzzArgs(raw []byte) (map[string]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// FuzzValidateArgs feeds a model's tool-call arguments, decoded as the
// providers decode them, through argument validation and the execution
// pipeline for every tool. Neither may panic; a refusal is a bad_args
// result that names the problem and never reaches the workspace; an
// accepted argument set holds exactly the declared parameters, validates
// again to itself (also after a trip through JSON, as the transcript and a
// resumed history carry it), canonicalises as the raw arguments do, and
// runs with those arguments.
func FuzzValidateArgs(f *testing.F) {
	index := func(name string) uint8 {
		for i, n := range fuzzToolNames {
			if n == name {
				return uint8(i)
			}
		}
		panic(name)
	}
	for _, s := range []struct{ tool, args string }{
		// From tools_test.go.
		{"frobnicate", `{}`},
		{EditFile, `{"path":"f"}`},
		{ReadFile, `{"path":3}`},
		{ReadFile, `{"path":"f","offset":true}`},
		{ReadFile, `{"path":"f","limit":"1.5"}`},
		{ReadFile, `{"path":"a.txt","offset":"60","bogus":1}`},
		{ListDir, `{"path":null}`},
		{ListDir, `{}`},
		{ApplyEdits, `{"path":"f","edits":"x"}`},
		{ApplyEdits, `{"path":"f","edits":[]}`},
		{ApplyEdits, `{"path":"f","edits":[1]}`},
		{ApplyEdits, `{"path":"f","edits":[{"old":"a","new":"b"},{"old":"a"}]}`},
		{ApplyEdits, `{"path":"f","edits":[{"old":"a","new":"b"},{"old":"a","new":"b","note":"x"}]}`},
		{ApplyEdits, `{"path":"f","edits":[{"old":"a","new":"b"},{"old":"a","new":"b"},{"old":"a","new":2}]}`},
		{ApplyEdits, `{"path":"f","edits":[{"old":"a","new":"b"}]}`},
		{Grep, `{"pattern":"x","glob":null}`},
		{Grep, `{"pattern":"func Fuzz","path":"engine","glob":"*_test.go","timeout":5}`},
		{Bash, `{"command":"true","timeout":9999}`},
		{Bash, `{"command":"git push origin main"}`},
		{WriteFile, `{"path":"a","content":"b"}`},
		{InsertBefore, `{"path":"a.go","anchor":"func main()","text":"// main runs.\n"}`},
		{InsertAfter, `{"path":"a.go","anchor":"package a","text":"\nimport \"os\"\n"}`},
		{Finish, `{"summary":"Fixed the off-by-one; go test ./... passes."}`},
		// Arguments the recorded provider replies carry (provider testdata).
		{ReadFile, `{"path":"internal/app/app.go","offset":0}`},
		{ReadFile, `{"path": "cmd/main.go"}`},
		{ReadFile, `{"path":"internal/app/app.go","offset":120,"limit":80}`},
		{Bash, `{"command":"go vet ./...","timeout":300}`},
		{Bash, `{"command": "pytest -q", "timeout": 120}`},
		{Bash, `{"command":"go test ./... -run 'TestPager/next page' -count=1 2>&1 | tail -n 40"}`},
		{Grep, `{"pattern":"TODO","path":"."}`},
		{Grep, `{"pattern": broken`},
		{WriteFile, `{"path": "big.py", "content": "def a():\n    return 1\n\ndef b`},
		{ReadFile, `{"path":"a.txt","offset":1e2,"limit":-0}`},
		{ReadFile, `{"path":"a.txt","offset":99999999999999999999}`},
	} {
		f.Add(index(s.tool), []byte(s.args))
	}
	f.Fuzz(func(t *testing.T, tool uint8, raw []byte) {
		name := fuzzToolNames[int(tool)%len(fuzzToolNames)]
		args, ok := decodeFuzzArgs(raw)
		if !ok {
			// The provider reports the call malformed; the loop never
			// validates it. Canonical still sees it as nil arguments.
			_ = Canonical(name, nil)
			return
		}
		if canon := Canonical(name, args); !json.Valid([]byte(canon)) {
			t.Fatalf("Canonical(%s) = %q, not JSON", name, canon)
		}
		ws := &fakeWS{answer: "ok"}
		res, err := New(ws, policy.Options{}).Execute(t.Context(), name, args, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatalf("Execute(%s): %v", name, err)
		}
		s, known := specByName[name]
		if !known || name == Finish {
			if res.FailureKind != KindUnknownTool || len(ws.calls) != 0 {
				t.Fatalf("unknown tool %q: %+v, workspace calls %v", name, res, ws.calls)
			}
			if !known {
				return
			}
		}
		fresh, _ := decodeFuzzArgs(raw)
		valid, detail := s.validate(args)
		if !reflect.DeepEqual(args, fresh) {
			t.Fatalf("validate changed its input:\n%#v\nwas\n%#v", args, fresh)
		}
		if detail != "" {
			if valid != nil {
				t.Fatalf("refused (%s) with arguments %#v", detail, valid)
			}
			want := "ERROR: bad arguments for " + name + ": " + detail
			if name != Finish && (res.FailureKind != KindBadArgs || res.Text != want || len(ws.calls) != 0) {
				t.Fatalf("refused args ran or were reported as %+v (calls %v), want %q", res, ws.calls, want)
			}
			return
		}
		if len(valid) != len(s.params) {
			t.Fatalf("accepted %d keys for %d parameters: %#v", len(valid), len(s.params), valid)
		}
		for _, p := range s.params {
			if _, ok := valid[p.name]; !ok {
				t.Fatalf("accepted arguments lack %q: %#v", p.name, valid)
			}
		}
		again, detail := s.validate(valid)
		if detail != "" || !reflect.DeepEqual(again, valid) {
			t.Fatalf("accepted arguments validate again to %#v (%q), were %#v", again, detail, valid)
		}
		data, err := json.Marshal(valid)
		if err != nil {
			t.Fatalf("accepted arguments do not encode: %v", err)
		}
		decoded, ok := decodeFuzzArgs(data)
		if !ok {
			t.Fatalf("accepted arguments encode to %s, not an object", data)
		}
		if trip, detail := s.validate(decoded); detail != "" || !reflect.DeepEqual(trip, valid) {
			t.Fatalf("accepted arguments after JSON (%s) validate to %#v (%q), were %#v", data, trip, detail, valid)
		}
		if a, b := Canonical(name, args), Canonical(name, valid); a != b {
			t.Fatalf("Canonical of the raw arguments %s differs from the validated ones' %s", a, b)
		}
		if name == Finish {
			return
		}
		wantCalls := 1
		if res.Blocked {
			wantCalls = 0 // the deny-list refused the command
		}
		if res.FailureKind != "" || len(ws.calls) != wantCalls {
			t.Fatalf("accepted arguments gave %+v, workspace calls %v", res, ws.calls)
		}
		ran := maps.Clone(res.Args)
		if name == Bash || name == Grep {
			to, ok := ran["timeout"].(int)
			if !ok || to < 1 || (name == Bash && to > bashMaxTimeout) {
				t.Fatalf("%s ran with timeout %#v", name, ran["timeout"])
			}
			ran["timeout"] = valid["timeout"]
		}
		if !reflect.DeepEqual(ran, valid) {
			t.Fatalf("ran with %#v, validated %#v", ran, valid)
		}
		if name == Bash && !res.Blocked && ws.calls[0] != "bash "+valid["command"].(string) {
			t.Fatalf("bash dispatched as %q", ws.calls[0])
		}
	})
}
