package openai

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// chatRaw answers one non-streamed request with body.
func chatRaw(t *testing.T, body string) (provider.Response, error) {
	t.Helper()
	_, p, _ := serve(t, rawTurn(body))
	return p.Chat(t.Context(), ask())
}

// completionWith wraps a message object in a chat completion.
func completionWith(message, finish, usage string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":` + message +
		`,"finish_reason":` + finish + `}],"usage":` + usage + `}`
}

func TestMalformedBodiesAreMalformed(t *testing.T) {
	for name, body := range map[string]string{
		"empty object":       `{}`,
		"no choices":         `{"choices":[]}`,
		"choices not a list": `{"choices":{"0":{"message":{}}}}`,
		"choice not object":  `{"choices":[1]}`,
		"no message":         `{"choices":[{"finish_reason":"stop"}]}`,
		"message a string":   `{"choices":[{"message":"hi"}]}`,
		"message null":       `{"choices":[{"message":null}]}`,
		"top-level list":     `[{"choices":[]}]`,
		"top-level string":   `"hello"`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := chatRaw(t, body)
			pe := mustError(t, err)
			if !pe.Malformed || pe.Error() != "malformed response from server (no choices[0].message)" {
				t.Fatalf("error = %+v", pe)
			}
		})
	}
}

func TestInvalidJSONIsAnErrorButNotMalformed(t *testing.T) {
	for name, body := range map[string]string{
		"truncated":      `{"choices":[{"message":`,
		"garbage":        `<html>bad gateway</html>`,
		"trailing value": `{"choices":[]} {"choices":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := chatRaw(t, body)
			pe := mustError(t, err)
			if pe.Malformed || !strings.HasPrefix(pe.Error(), "invalid JSON from http://") {
				t.Fatalf("error = %+v", pe)
			}
		})
	}
}

func TestUsageFieldsCountOnlyFiniteNonNegativeNumbers(t *testing.T) {
	for name, tc := range map[string]struct {
		usage string
		want  provider.Usage
	}{
		"valid":            {`{"prompt_tokens":120,"completion_tokens":7}`, provider.Usage{PromptTokens: 120, CompletionTokens: 7}},
		"fractions cut":    {`{"prompt_tokens":12.9,"completion_tokens":0.5}`, provider.Usage{PromptTokens: 12}},
		"negative":         {`{"prompt_tokens":-1,"completion_tokens":-0.5}`, provider.Usage{}},
		"booleans":         {`{"prompt_tokens":true,"completion_tokens":false}`, provider.Usage{}},
		"strings":          {`{"prompt_tokens":"10","completion_tokens":"3"}`, provider.Usage{}},
		"non-finite":       {`{"prompt_tokens":NaN,"completion_tokens":-Infinity}`, provider.Usage{}},
		"overflowing":      {`{"prompt_tokens":1e400,"completion_tokens":2}`, provider.Usage{CompletionTokens: 2}},
		"null and missing": {`{"prompt_tokens":null}`, provider.Usage{}},
		"usage null":       {`null`, provider.Usage{}},
		"usage a list":     {`[1,2]`, provider.Usage{}},
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := chatRaw(t, completionWith(`{"role":"assistant","content":"ok"}`, `"stop"`, tc.usage))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage != tc.want {
				t.Fatalf("usage = %+v, want %+v", resp.Usage, tc.want)
			}
		})
	}
}

func TestInvalidEntriesAreUnaddressable(t *testing.T) {
	// Six entries breaking each E-58 rule, two of them with a good id.
	entries := `[
		5,
		{"id":"call_a","type":"function"},
		{"id":"call_b","type":"function","function":"read_file"},
		{"id":"call_c","type":"function","function":{"name":"","arguments":"{}"}},
		{"id":7,"type":"function","function":{"name":"read_file","arguments":"{}"}},
		{"id":"call_d","type":"function","function":{"name":"bash","arguments":[1,2]}}
	]`
	resp, err := chatRaw(t, completionWith(`{"role":"assistant","content":"","tool_calls":`+entries+`}`, `"tool_calls"`, `{}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 6 {
		t.Fatalf("%d calls, want 6", len(resp.ToolCalls))
	}
	for i, c := range resp.ToolCalls {
		want := provider.ToolCall{Error: "malformed tool call entry (missing or invalid id/function fields)"}
		if !reflect.DeepEqual(c, want) {
			t.Errorf("entry %d = %+v, want %+v", i, c, want)
		}
	}
}

func TestArgumentsParseRules(t *testing.T) {
	for name, tc := range map[string]struct {
		arguments string // the JSON of the arguments field; "" leaves it out
		raw       string
		args      map[string]any
		errPrefix string
	}{
		"object text":   {`"{\"path\":\"a.go\",\"limit\":40}"`, `{"path":"a.go","limit":40}`, map[string]any{"path": "a.go", "limit": json.Number("40")}, ""},
		"absent":        {"", "{}", map[string]any{}, ""},
		"null":          {`null`, "{}", map[string]any{}, ""},
		"empty":         {`""`, "{}", map[string]any{}, ""},
		"list":          {`"[1,2]"`, "[1,2]", nil, "malformed tool arguments: must be a JSON object"},
		"number":        {`"42"`, "42", nil, "malformed tool arguments: must be a JSON object"},
		"not JSON":      {`"{\"path\": unquoted}"`, `{"path": unquoted}`, nil, "malformed tool arguments: "},
		"cut off":       {`"{\"content\": \"package ma"`, `{"content": "package ma`, nil, "malformed tool arguments: unexpected end of JSON input"},
		"object quirk":  {`{"command":"ls","timeout":5}`, `{"command":"ls","timeout":5}`, map[string]any{"command": "ls", "timeout": json.Number("5")}, ""},
		"NaN in object": {`"{\"x\": NaN}"`, `{"x": NaN}`, map[string]any{"x": nil}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			fn := `{"name":"tool"`
			if tc.arguments != "" {
				fn += `,"arguments":` + tc.arguments
			}
			fn += `}`
			msg := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":` + fn + `}]}`
			resp, err := chatRaw(t, completionWith(msg, `"tool_calls"`, `{}`))
			if err != nil {
				t.Fatal(err)
			}
			c := resp.ToolCalls[0]
			if c.ID != "call_1" || c.Name != "tool" || c.RawArguments != tc.raw {
				t.Fatalf("call = %+v", c)
			}
			if tc.errPrefix != "" {
				if c.Arguments != nil || !strings.HasPrefix(c.Error, tc.errPrefix) {
					t.Fatalf("arguments %v error %q, want error starting %q", c.Arguments, c.Error, tc.errPrefix)
				}
				return
			}
			if c.Error != "" || !reflect.DeepEqual(c.Arguments, tc.args) {
				t.Fatalf("arguments %#v error %q, want %#v", c.Arguments, c.Error, tc.args)
			}
		})
	}
}

func TestContentShapes(t *testing.T) {
	for name, tc := range map[string]struct {
		content string
		want    string
	}{
		"text":  {`"hello <b>"`, "hello <b>"},
		"null":  {`null`, ""},
		"parts": {`[{"type":"text","text":"hi"}]`, ""},
		"num":   {`3`, ""},
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := chatRaw(t, completionWith(`{"role":"assistant","content":`+tc.content+`,"tool_calls":"none"}`, `"stop"`, `{}`))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tc.want || resp.ToolCalls != nil {
				t.Fatalf("text %q calls %v", resp.Text, resp.ToolCalls)
			}
		})
	}
}

func TestFinishReasonPassesThrough(t *testing.T) {
	for _, tc := range []struct{ finish, want string }{
		{`"stop"`, "stop"},
		{`"length"`, "length"},
		{`"tool_calls"`, "tool_calls"},
		{`"content_filter"`, "content_filter"},
		{`null`, ""},
		{`7`, ""},
	} {
		resp, err := chatRaw(t, completionWith(`{"role":"assistant","content":"x"}`, tc.finish, `{}`))
		if err != nil {
			t.Fatal(err)
		}
		if resp.FinishReason != tc.want {
			t.Errorf("finish_reason %s → %q, want %q", tc.finish, resp.FinishReason, tc.want)
		}
	}
}

func TestParallelCallsKeepTheirOrder(t *testing.T) {
	calls := `[
		{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}},
		{"id":"c2","type":"function"},
		{"id":"c3","type":"function","function":{"name":"grep","arguments":"{\"pattern\":\"x\"}"}},
		{"id":"c4","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}
	]`
	resp, err := chatRaw(t, completionWith(`{"role":"assistant","content":"Looking.","tool_calls":`+calls+`}`, `"tool_calls"`, `{}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range resp.ToolCalls {
		got = append(got, c.ID+":"+c.Name)
	}
	if want := []string{"c1:read_file", ":", "c3:grep", "c4:bash"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
}

func TestCutOffCallKeepsItsID(t *testing.T) {
	msg := `{"role":"assistant","content":"","tool_calls":[{"id":"call_w","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"big.go\",\"content\":\"package big\\n\\nfunc"}}]}`
	resp, err := chatRaw(t, completionWith(msg, `"length"`, `{"prompt_tokens":10,"completion_tokens":4096}`))
	if err != nil {
		t.Fatal(err)
	}
	c := resp.ToolCalls[0]
	if resp.FinishReason != "length" || c.ID != "call_w" || c.Name != "write_file" || c.Arguments != nil ||
		!strings.HasPrefix(c.Error, "malformed tool arguments: ") || !strings.HasPrefix(c.RawArguments, `{"path":"big.go"`) {
		t.Fatalf("response = %+v", resp)
	}
}

func TestNaNAndInfinityBodiesAccepted(t *testing.T) {
	resp, err := chatRaw(t, fixture(t, "nan_usage.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := provider.Response{
		Text: "NaN and Infinity inside strings stay text",
		ToolCalls: []provider.ToolCall{{
			ID: "call_1", Name: "read_file", RawArguments: `{"path": "a.txt", "weight": NaN}`,
			Arguments: map[string]any{"path": "a.txt", "weight": nil},
		}},
		FinishReason: "tool_calls",
	}
	if !reflect.DeepEqual(resp, want) {
		t.Fatalf("response = %+v\nwant %+v", resp, want)
	}
}

func TestIDLessCallsGetStableUniqueIDs(t *testing.T) {
	_, p, _ := serve(t, rawTurn(fixture(t, "ollama_chat_noid.json")))
	first, err := p.Chat(t.Context(), ask())
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.Chat(t.Context(), ask())
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, resp := range []provider.Response{first, again} {
		if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].Name != "read_file" || resp.ToolCalls[1].Name != "grep" {
			t.Fatalf("calls = %+v", resp.ToolCalls)
		}
		for _, c := range resp.ToolCalls {
			if len(c.ID) != 9 || strings.Trim(c.ID, "abcdefghijklmnopqrstuvwxyz0123456789") != "" || c.Error != "" {
				t.Errorf("made-up id %q (error %q): want nine letters and digits", c.ID, c.Error)
			}
			ids[c.ID] = true
		}
	}
	if len(ids) != 4 {
		t.Fatalf("ids %v are not unique across replies", ids)
	}
	if first.FinishReason != "stop" || first.Usage != (provider.Usage{PromptTokens: 1873, CompletionTokens: 41}) {
		t.Errorf("reply = %+v", first)
	}
}

func TestServerFixtures(t *testing.T) {
	vet := provider.ToolCall{
		Name: "bash", RawArguments: `{"command": "go vet ./...", "timeout": 300}`,
		Arguments: map[string]any{"command": "go vet ./...", "timeout": json.Number("300")},
	}
	read := provider.ToolCall{
		Name: "read_file", RawArguments: `{"path": "cmd/main.go"}`,
		Arguments: map[string]any{"path": "cmd/main.go"},
	}
	for _, tc := range []struct {
		file string
		want provider.Response
	}{
		{"vllm_chat_toolcalls.json", provider.Response{
			ToolCalls: []provider.ToolCall{
				withID(read, "chatcmpl-tool-5f2a9c1e8d7b4a3f"),
				withID(vet, "chatcmpl-tool-0c4e7a2b9f1d3e5a"),
			},
			FinishReason: "tool_calls", Usage: provider.Usage{PromptTokens: 4120, CompletionTokens: 67},
		}},
		{"llamacpp_chat_toolcalls.json", provider.Response{
			ToolCalls: []provider.ToolCall{
				compact(withID(read, "qT7mV1bX9cRk2LpZ4sWd8eYf0hJn3uGa")),
				compact(withID(vet, "Bz5Nw2Qe7Rt1Yu8Io3Pa6Sd9Fg4Hj0Kl")),
			},
			FinishReason: "tool_calls", Usage: provider.Usage{PromptTokens: 4120, CompletionTokens: 67},
		}},
		{"ollama_chat_object_args.json", provider.Response{
			ToolCalls: []provider.ToolCall{{
				ID: "call_u3k1w9qz", Name: "bash", RawArguments: `{"command":"go test ./...","timeout":120}`,
				Arguments: map[string]any{"command": "go test ./...", "timeout": json.Number("120")},
			}},
			FinishReason: "tool_calls", Usage: provider.Usage{PromptTokens: 2210, CompletionTokens: 33},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			resp, err := chatRaw(t, fixture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resp, tc.want) {
				t.Fatalf("response = %+v\nwant       %+v", resp, tc.want)
			}
		})
	}
}

func withID(c provider.ToolCall, id string) provider.ToolCall {
	c.ID = id
	return c
}

// compact is c with its raw arguments written without spaces, as
// llama.cpp writes them.
func compact(c provider.ToolCall) provider.ToolCall {
	data, _ := json.Marshal(c.Arguments)
	c.RawArguments = string(data)
	return c
}
