package openai

import (
	"bufio"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestSSEReader(t *testing.T) {
	for name, tc := range map[string]struct {
		body string
		want []sseEvent
	}{
		"one event per data line": {
			"data: {\"a\":1}\n\ndata: [DONE]\n\n",
			[]sseEvent{{data: []byte(`{"a":1}`)}, {data: []byte(`[DONE]`)}},
		},
		"CRLF, comments, ids and no space after the colon": {
			": keep-alive\r\nid: 7\r\nretry: 1000\r\ndata:{\"a\":1}\r\n\r\n",
			[]sseEvent{{data: []byte(`{"a":1}`)}},
		},
		"data lines of one event are joined": {
			"data: {\"a\":\ndata: 1}\n\n",
			[]sseEvent{{data: []byte("{\"a\":\n1}")}},
		},
		"last event without a blank line": {
			"data: {\"a\":1}\n\ndata: {\"b\":2}",
			[]sseEvent{{data: []byte(`{"a":1}`)}, {data: []byte(`{"b":2}`)}},
		},
		"error field and error event": {
			"error: {\"message\":\"x\"}\n\nevent: error\ndata: {\"message\":\"y\"}\n\n",
			[]sseEvent{{data: []byte(`{"message":"x"}`), failure: true}, {data: []byte(`{"message":"y"}`), failure: true}},
		},
		"blank lines only": {"\n\n\r\n", nil},
	} {
		t.Run(name, func(t *testing.T) {
			r := &sseReader{r: bufio.NewReader(strings.NewReader(tc.body))}
			var got []sseEvent
			for {
				ev, err := r.next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("events = %+v, want %+v", got, tc.want)
			}
		})
	}
}
