package openai

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// sseEvent is one server-sent event's data.
type sseEvent struct {
	data []byte
	// failure marks an error event: llama.cpp writes "error: {...}", some
	// proxies "event: error".
	failure bool
}

// doneData is the data OpenAI-compatible servers end a stream with.
var doneData = []byte("[DONE]")

// sseReader splits a text/event-stream body into events. It follows the
// event-stream format closely enough for model servers: data lines joined
// by newlines, comment lines ignored, an event ended by a blank line or
// the end of the body.
type sseReader struct {
	r *bufio.Reader
}

// next returns the next event with data, or io.EOF at the end of the body.
// Other read errors are returned as they are.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var data bytes.Buffer
	hasData := false
	for {
		line, err := s.r.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return sseEvent{}, err
		}
		atEOF := err != nil
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if hasData {
				ev.data = data.Bytes()
				return ev, nil
			}
			if atEOF {
				return sseEvent{}, io.EOF
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data", "error":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
			ev.failure = ev.failure || string(field) == "error"
		case "event":
			ev.failure = ev.failure || string(value) == "error"
		}
		// "" (a comment), "id", "retry" and unknown fields carry nothing
		// a reply needs.
		if atEOF {
			if hasData {
				ev.data = data.Bytes()
				return ev, nil
			}
			return sseEvent{}, io.EOF
		}
	}
}
