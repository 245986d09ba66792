package toolbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
)

// fakeServer answers each request a client sends with whatever respond
// writes, standing for a server the worker has taken over. respond gets
// the client's key: the fake stands for the worst case, a server that
// knows it, so the client's decoding is tested behind the tag.
func fakeServer(t *testing.T, respond func(req request, key []byte, w io.Writer), opts ...Option) *Client {
	t.Helper()
	reqR, reqW := io.Pipe()
	repR, repW := io.Pipe()
	c := NewClient(repR, reqW, opts...)
	key := c.key
	go func() {
		defer func() { _ = repW.Close() }()
		for {
			f, err := readFrame(reqR, maxRequestFrame)
			if err != nil {
				return
			}
			if err := f.open(key, dirRequest); err != nil {
				t.Errorf("fake server: client sent %q: %v", f.body, err)
				return
			}
			var req request
			if err := json.Unmarshal(f.body, &req); err != nil {
				t.Errorf("fake server: client sent %q: %v", f.body, err)
				return
			}
			switch req.Kind {
			case kindCancel:
				continue
			case kindShutdown:
				_, _ = repW.Write(taggedFrame(key, dirReply, req.ID, `{"id":`+jsonID(req.ID)+`,"result":{}}`))
				return
			}
			respond(req, key, repW)
		}
	}()
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// taggedFrame is body framed for id going in direction dir, tagged under
// key, as an honest peer sends it.
func taggedFrame(key []byte, dir byte, id uint64, body string) []byte {
	tag := frameTag(key, dir, id, []byte(body))
	f := binary.BigEndian.AppendUint32(nil, uint32(idSize+tagSize+len(body)))
	f = binary.BigEndian.AppendUint64(f, id)
	f = append(f, tag[:]...)
	return append(f, body...)
}

// replyWith answers every request with the JSON fmt.Sprintf(format, id),
// tagged with the key.
func replyWith(format string) func(req request, key []byte, w io.Writer) {
	return func(req request, key []byte, w io.Writer) {
		_, _ = w.Write(taggedFrame(key, dirReply, req.ID, strings.ReplaceAll(format, "ID", jsonID(req.ID))))
	}
}

func jsonID(id uint64) string { b, _ := json.Marshal(id); return string(b) }

// TestHostileServer proves every way a server can misbehave ends the call
// with ErrServerGone within its deadline, breaks the client for later
// calls, and panics nothing.
func TestHostileServer(t *testing.T) {
	const deadline = 300 * time.Millisecond
	type call func(c *Client) error
	readFile := func(c *Client) error { _, err := c.ReadFile(t.Context(), "a", 0, 1); return err }
	bash := func(c *Client) error {
		_, err := c.Bash(t.Context(), "true", time.Millisecond)
		return err
	}
	measure := func(c *Client) error { _, err := c.Measure(t.Context(), limitsNone); return err }
	hello := func(c *Client) error { _, err := c.Hello(t.Context(), sandbox.Limits{}); return err }
	budget := func(c *Client) error { _, err := c.Budget(t.Context()); return err }
	tests := []struct {
		name    string
		respond func(req request, key []byte, w io.Writer)
		call    call
		cause   error // also wrapped, when set
	}{
		{"garbage body", replyWith("not json at all"), readFile, nil},
		{"garbage stream", func(_ request, _ []byte, w io.Writer) { _, _ = w.Write([]byte("HTTP/1.1 200 OK\r\n\r\n")) }, readFile, errFrameTooLarge},
		{"oversized frame", func(_ request, _ []byte, w io.Writer) {
			_, _ = w.Write(binary.BigEndian.AppendUint32(nil, idSize+tagSize+maxReplyFrame+1))
		}, readFile, errFrameTooLarge},
		{"wrong id", func(req request, key []byte, w io.Writer) {
			_, _ = w.Write(taggedFrame(key, dirReply, req.ID+1, `{"id":`+jsonID(req.ID+1)+`,"result":{"text":""}}`))
		}, readFile, nil},
		{"body of another id", func(req request, key []byte, w io.Writer) {
			_, _ = w.Write(taggedFrame(key, dirReply, req.ID, `{"id":`+jsonID(req.ID+1)+`,"result":{"text":""}}`))
		}, readFile, nil},
		{"forged tag", func(req request, _ []byte, w io.Writer) {
			_, _ = w.Write(taggedFrame(newKey(), dirReply, req.ID, `{"id":`+jsonID(req.ID)+`,"result":{"text":"FORGED"}}`))
		}, readFile, errBadTag},
		{"request direction", func(req request, key []byte, w io.Writer) {
			_, _ = w.Write(taggedFrame(key, dirRequest, req.ID, `{"id":`+jsonID(req.ID)+`,"result":{"text":"FORGED"}}`))
		}, readFile, errBadTag},
		{"short frame", func(_ request, _ []byte, w io.Writer) {
			_, _ = w.Write(binary.BigEndian.AppendUint32(nil, 3))
			_, _ = w.Write([]byte("{}x"))
		}, readFile, nil},
		{"id zero", replyWith(`{"id":0,"result":{"text":""}}`), readFile, nil},
		{"half frame then EOF", func(_ request, _ []byte, w io.Writer) {
			_, _ = w.Write(taggedFrame(nil, dirReply, 1, `{"id":1,"result":{"text":""}}`)[:10])
			_ = w.(io.Closer).Close()
		}, readFile, io.ErrUnexpectedEOF},
		{"half header then EOF", func(_ request, _ []byte, w io.Writer) {
			_, _ = w.Write([]byte{0, 0})
			_ = w.(io.Closer).Close()
		}, readFile, io.ErrUnexpectedEOF},
		{"EOF", func(_ request, _ []byte, w io.Writer) { _ = w.(io.Closer).Close() }, readFile, io.EOF},
		{"silence", func(request, []byte, io.Writer) {}, readFile, nil},
		{"silence on bash", func(request, []byte, io.Writer) {}, bash, nil},
		{"unknown field", replyWith(`{"id":ID,"result":{"text":"","extra":1}}`), readFile, nil},
		{"unknown envelope field", replyWith(`{"id":ID,"result":{"text":""},"x":1}`), readFile, nil},
		{"trailing data", replyWith(`{"id":ID,"result":{"text":""}} {}`), readFile, nil},
		{"result and error", replyWith(`{"id":ID,"result":{"text":""},"error":{"kind":"internal","message":""}}`), readFile, nil},
		{"neither", replyWith(`{"id":ID}`), readFile, nil},
		{"null result", replyWith(`{"id":ID,"result":null}`), readFile, nil},
		{"missing text", replyWith(`{"id":ID,"result":{}}`), readFile, nil},
		{"text not base64", replyWith(`{"id":ID,"result":{"text":"%%%"}}`), readFile, nil},
		{"wrong result kind", replyWith(`{"id":ID,"result":{"exit_code":0,"output":"","capped":false,"timed_out":false,"launch_error":""}}`), readFile, nil},
		{"unknown error kind", replyWith(`{"id":ID,"error":{"kind":"teapot","message":""}}`), readFile, nil},
		{"unasked cancellation", replyWith(`{"id":ID,"error":{"kind":"canceled","message":""}}`), readFile, nil},
		{"exit code out of range", replyWith(`{"id":ID,"result":{"exit_code":999,"output":"","capped":false,"timed_out":false,"launch_error":""}}`), bash, nil},
		{"timeout with output", replyWith(`{"id":ID,"result":{"exit_code":-1,"output":"eA==","capped":false,"timed_out":true,"launch_error":""}}`), bash, nil},
		{"output not UTF-8", replyWith(`{"id":ID,"result":{"exit_code":0,"output":"/w==","capped":false,"timed_out":false,"launch_error":""}}`), bash, nil},
		{"negative measure", replyWith(`{"id":ID,"result":{"bytes":-1,"entries":0,"escaping_symlinks":[],"escaping_truncated":false,"violation":""}}`), measure, nil},
		{"hello of another version", replyWith(`{"id":ID,"result":{"version":99,"pid":1,"uid":0,"gid":0,"root":"L3dvcms=","dumpable":false}}`), hello, nil},
		{"forged budget verdict", func(req request, _ []byte, w io.Writer) {
			_, _ = w.Write(taggedFrame(newKey(), dirReply, req.ID, `{"id":`+jsonID(req.ID)+`,"result":{"bytes":0,"entries":0,"escaping_symlinks":[],"escaping_truncated":false,"violation":"Rk9SR0VE"}}`))
		}, budget, errBadTag},
		{"implausible hello", replyWith(`{"id":ID,"result":{"version":1,"pid":0,"uid":0,"gid":0,"root":"L3dvcms=","dumpable":false}}`), hello, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeServer(t, tc.respond, WithCallTimeout(deadline), WithCommandMargin(deadline))
			// A server that never answers would hold the call forever:
			// returning at all, with ErrServerGone, is the deadline's
			// doing; the bound is only a liveness one.
			start := time.Now()
			err := tc.call(c)
			if elapsed := time.Since(start); elapsed > deadline+30*time.Second {
				t.Errorf("took %v, want the %v deadline to end it", elapsed, deadline)
			}
			if !errors.Is(err, ErrServerGone) {
				t.Fatalf("error %v, want ErrServerGone", err)
			}
			if tc.cause != nil && !errors.Is(err, tc.cause) {
				t.Errorf("error %v does not wrap %v", err, tc.cause)
			}
			select {
			case <-c.Done():
			default:
				t.Error("Done not closed")
			}
			if err := readFile(c); !errors.Is(err, ErrServerGone) {
				t.Errorf("next call: %v, want ErrServerGone at once", err)
			}
		})
	}
}

// TestClientCarriesOnAfterErrorReplies proves error replies of known kinds
// are RemoteErrors, not a broken server.
func TestClientCarriesOnAfterErrorReplies(t *testing.T) {
	kinds := map[string]error{"bad_request": ErrBadRequest, "closed_root": ErrClosedRoot, "busy": ErrBusy, "version": ErrVersion, "internal": ErrInternal}
	for kind, sentinel := range kinds {
		c := fakeServer(t, replyWith(`{"id":ID,"error":{"kind":"`+kind+`","message":"m"}}`))
		_, err := c.ListDir(t.Context(), ".")
		var re *RemoteError
		if !errors.As(err, &re) || !errors.Is(err, sentinel) || re.Kind != kind || re.Op != kindListDir {
			t.Errorf("%s: error %v, want a RemoteError matching %v", kind, err, sentinel)
		}
		if c.Err() != nil {
			t.Errorf("%s: client broken: %v", kind, c.Err())
		}
	}
}

// TestOversizedHeaderAllocatesNothing proves a length prefix is checked
// before anything is allocated for the body, and that a prefix within the
// cap promising more than arrives costs only what arrives.
func TestOversizedHeaderAllocatesNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream []byte
	}{
		{"over the cap", binary.BigEndian.AppendUint32(nil, 1<<31)},
		{"within the cap, short", append(binary.BigEndian.AppendUint32(nil, maxReplyFrame), "{}"...)},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range 20 {
			if _, err := readFrame(bytes.NewReader(tc.stream), maxReplyFrame); err == nil {
				t.Fatalf("%s: read a frame", tc.name)
			}
		}
		runtime.ReadMemStats(&after)
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 {
			t.Errorf("%s: 20 reads allocated %d bytes, want well under 1 MiB", tc.name, grown)
		}
	}
}

// TestCancelWithoutAnswerBreaksClient proves a server that ignores a
// cancellation is declared gone after the grace, while the call returns
// the context's error.
func TestCancelWithoutAnswerBreaksClient(t *testing.T) {
	c := fakeServer(t, func(request, []byte, io.Writer) {}, WithCancelGrace(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Bash(ctx, "sleep 600", time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the context's", err)
	}
	// The fake server never answers: only the context ends the call
	// before the command's minute (a liveness bound, not speed).
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Errorf("took %v, want the context to end the call", elapsed)
	}
	if !errors.Is(c.Err(), ErrServerGone) {
		t.Errorf("client error %v, want ErrServerGone", c.Err())
	}
}

// TestRequestTooLarge proves oversized requests never leave the client
// and leave it usable.
func TestRequestTooLarge(t *testing.T) {
	c := startPipe(t, ServerConfig{Root: t.TempDir()})
	if _, err := c.WriteFile(t.Context(), "f", strings.Repeat("x", maxRequestFrame)); !errors.Is(err, ErrRequestTooLarge) {
		t.Errorf("huge content: %v, want ErrRequestTooLarge", err)
	}
	if _, err := c.ReadFile(t.Context(), strings.Repeat("a/", maxPathBytes), 0, 1); !errors.Is(err, ErrRequestTooLarge) {
		t.Errorf("huge path: %v, want ErrRequestTooLarge", err)
	}
	if out, err := c.WriteFile(t.Context(), "f", "ok\n"); err != nil || !strings.HasPrefix(out, "Wrote") {
		t.Errorf("next call: %q, %v", out, err)
	}
}

var limitsNone = sandbox.Limits{}
