package toolbox

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/fsops"
)

// rawPeer speaks frames to an in-process server directly, standing for a
// confused or hostile client. It holds a key of its own, which its first
// frame, a hello, hands the server.
type rawPeer struct {
	t      *testing.T
	key    []byte
	w      *io.PipeWriter
	r      *io.PipeReader
	served chan error
}

func newRawPeer(t *testing.T, cfg ServerConfig) *rawPeer {
	t.Helper()
	reqR, reqW := io.Pipe()
	repR, repW := io.Pipe()
	p := &rawPeer{t: t, key: newKey(), w: reqW, r: repR, served: make(chan error, 1)}
	go func() {
		err := Serve(t.Context(), reqR, repW, cfg)
		_ = repW.Close()
		p.served <- err
	}()
	t.Cleanup(func() {
		_ = reqW.Close()
		_ = repR.Close()
	})
	return p
}

func (p *rawPeer) send(frame []byte) {
	p.t.Helper()
	if _, err := p.w.Write(frame); err != nil {
		p.t.Fatalf("send: %v", err)
	}
}

// sendBody sends body as the request frame for id, tagged with the key.
func (p *rawPeer) sendBody(id uint64, body string) {
	p.t.Helper()
	p.send(taggedFrame(p.key, dirRequest, id, body))
}

// recv reads one reply, within 10 s; it must carry the key's tag.
func (p *rawPeer) recv() reply {
	p.t.Helper()
	type got struct {
		f   wireFrame
		err error
	}
	ch := make(chan got, 1)
	go func() {
		f, err := readFrame(p.r, maxReplyFrame)
		ch <- got{f, err}
	}()
	select {
	case g := <-ch:
		if g.err != nil {
			p.t.Fatalf("recv: %v", g.err)
		}
		if err := g.f.open(p.key, dirReply); err != nil {
			p.t.Fatalf("recv: %v", err)
		}
		var rep reply
		if err := decodeStrict(g.f.body, &rep); err != nil {
			p.t.Fatalf("recv %q: %v", g.f.body, err)
		}
		if rep.ID != g.f.id {
			p.t.Fatalf("reply %d framed as %d", rep.ID, g.f.id)
		}
		return rep
	case <-time.After(10 * time.Second):
		p.t.Fatal("no reply within 10s")
	}
	return reply{}
}

// expectError reads a reply that must be an error of kind for id.
func (p *rawPeer) expectError(what string, id uint64, kind string) {
	p.t.Helper()
	rep := p.recv()
	if rep.ID != id || rep.Error == nil || rep.Error.Kind != kind {
		p.t.Errorf("%s: reply %+v (error %+v), want a %s error for id %d", what, rep, rep.Error, kind, id)
	}
}

// helloBody is a hello request handing over key.
func helloBody(id uint64, key []byte) string {
	return `{"id":` + jsonID(id) + `,"kind":"hello","args":{"version":` + strconv.Itoa(ProtocolVersion) + `,"key":"` + b64(string(key)) + `"}}`
}

// hello sends the peer's hello and expects a result.
func (p *rawPeer) hello(id uint64) {
	p.t.Helper()
	p.sendBody(id, helloBody(id, p.key))
	if rep := p.recv(); rep.ID != id || rep.Error != nil || len(rep.Result) == 0 {
		p.t.Fatalf("hello %d: %+v", id, rep)
	}
}

// ping lists the tree and expects a result: the server still serves.
func (p *rawPeer) ping(id uint64) {
	p.t.Helper()
	p.sendBody(id, `{"id":`+jsonID(id)+`,"kind":"list_dir","args":{"path":"Lg=="}}`)
	if rep := p.recv(); rep.ID != id || rep.Error != nil || len(rep.Result) == 0 {
		p.t.Fatalf("ping %d: %+v", id, rep)
	}
}

// TestHostileClient proves malformed requests from the peer holding the
// key are answered with errors and the server keeps serving.
func TestHostileClient(t *testing.T) {
	p := newRawPeer(t, ServerConfig{Root: t.TempDir()})
	p.hello(1000)
	tests := []struct {
		name  string
		frame string
		id    uint64
		kind  string
	}{
		{"not JSON", "hello?", 0, errKindBadRequest},
		{"unknown envelope field", `{"id":1,"kind":"list_dir","args":{"path":"Lg=="},"admin":true}`, 1, errKindBadRequest},
		{"unknown argument", `{"id":2,"kind":"read_file","args":{"path":"YQ==","offset":0,"limit":1,"follow":true}}`, 2, errKindBadRequest},
		{"unknown kind", `{"id":3,"kind":"exec","args":{}}`, 3, errKindBadRequest},
		{"missing arguments", `{"id":4,"kind":"read_file"}`, 4, errKindBadRequest},
		{"trailing data", `{"id":5,"kind":"list_dir","args":{"path":"Lg=="}}{}`, 5, errKindBadRequest},
		{"id zero", `{"id":0,"kind":"list_dir","args":{"path":"Lg=="}}`, 0, errKindBadRequest},
		{"wrong type", `{"id":6,"kind":"read_file","args":{"path":"YQ==","offset":"0","limit":1}}`, 6, errKindBadRequest},
		{"path not base64", `{"id":7,"kind":"list_dir","args":{"path":"%%"}}`, 7, errKindBadRequest},
		{"bash without timeout", `{"id":8,"kind":"bash","args":{"command":"dHJ1ZQ==","timeout_ms":0}}`, 8, errKindBadRequest},
		{"negative limits", `{"id":9,"kind":"measure","args":{"max_bytes":-1,"max_entries":0}}`, 9, errKindBadRequest},
		{"other version", `{"id":10,"kind":"hello","args":{"version":1}}`, 10, errKindVersion},
		{"shutdown with arguments", `{"id":11,"kind":"shutdown","args":{"now":true}}`, 11, errKindBadRequest},
		{"second hello", helloBody(12, p.key), 12, errKindBadRequest},
	}
	for i, tc := range tests {
		p.sendBody(tc.id, tc.frame)
		p.expectError(tc.name, tc.id, tc.kind)
		p.ping(uint64(100 + i))
	}

	// An oversized frame is skipped whole and refused; the next frame is
	// read in step.
	big := make([]byte, framePrefix+maxRequestFrame+1)
	binary.BigEndian.PutUint32(big, idSize+tagSize+maxRequestFrame+1)
	p.send(big)
	p.expectError("oversized frame", 0, errKindBadRequest)
	p.ping(200)

	// A cancellation of nothing gets no reply: the next reply is the ping's.
	p.sendBody(77, `{"id":77,"kind":"cancel"}`)
	p.ping(201)
}

// TestServerRefusesUnauthenticatedFrames proves the second wall from the
// server's side: serving ends, with nothing run and nothing answered, at a
// first frame that is not a hello with a key, at a frame whose tag is not
// the hello's key's (forged, tagged for the other direction, or for
// another id), and at a replayed request.
func TestServerRefusesUnauthenticatedFrames(t *testing.T) {
	other := newKey()
	listBody := func(id uint64) string { return `{"id":` + jsonID(id) + `,"kind":"list_dir","args":{"path":"Lg=="}}` }
	tests := []struct {
		name  string
		hello bool
		frame func(p *rawPeer) []byte
	}{
		{"first frame not a hello", false, func(p *rawPeer) []byte { return taggedFrame(p.key, dirRequest, 1, listBody(1)) }},
		{"hello without a key", false, func(p *rawPeer) []byte {
			return taggedFrame(p.key, dirRequest, 1, `{"id":1,"kind":"hello","args":{"version":3}}`)
		}},
		{"hello tagged with another key", false, func(p *rawPeer) []byte { return taggedFrame(other, dirRequest, 1, helloBody(1, p.key)) }},
		{"hello framed under another id", false, func(p *rawPeer) []byte { return taggedFrame(p.key, dirRequest, 2, helloBody(1, p.key)) }},
		{"forged tag", true, func(*rawPeer) []byte { return taggedFrame(other, dirRequest, 2, listBody(2)) }},
		{"no tag", true, func(*rawPeer) []byte {
			f := taggedFrame(other, dirRequest, 2, listBody(2))
			clear(f[frameHeader+idSize : framePrefix])
			return f
		}},
		{"reply direction", true, func(p *rawPeer) []byte { return taggedFrame(p.key, dirReply, 2, listBody(2)) }},
		{"tagged for another id", true, func(p *rawPeer) []byte {
			f := taggedFrame(p.key, dirRequest, 2, listBody(2))
			binary.BigEndian.PutUint64(f[frameHeader:], 3)
			return f
		}},
		{"body of another id", true, func(p *rawPeer) []byte { return taggedFrame(p.key, dirRequest, 2, listBody(3)) }},
		{"replayed request", true, func(p *rawPeer) []byte { return taggedFrame(p.key, dirRequest, 1, helloBody(1, p.key)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := newRawPeer(t, ServerConfig{Root: dir, Env: testEnv()})
			if tc.hello {
				p.hello(1)
			}
			p.send(tc.frame(p))
			select {
			case err := <-p.served:
				if err == nil {
					t.Fatal("Serve ended cleanly")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Serve still serves")
			}
		})
	}
}

// TestServerRefusesSecondCommandAndDuplicateID covers admission: one
// command at a time, and every id used once.
func TestServerRefusesSecondCommandAndDuplicateID(t *testing.T) {
	dir := t.TempDir()
	p := newRawPeer(t, ServerConfig{Root: dir, Env: testEnv()})
	p.hello(9)
	wait := `{"id":1,"kind":"bash","args":{"command":"` + b64("touch started; while [ ! -e go ]; do sleep 0.01; done") + `","timeout_ms":30000}}`
	p.sendBody(1, wait)
	waitFile(t, filepath.Join(dir, "started"))
	p.sendBody(2, `{"id":2,"kind":"bash","args":{"command":"dHJ1ZQ==","timeout_ms":1000}}`)
	p.expectError("second command", 2, errKindBusy)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if rep := p.recv(); rep.ID != 1 || rep.Error != nil {
		t.Errorf("first command: %+v", rep)
	}
	// Any id comes once: a request under a used one is a replay, and
	// serving ends.
	p.sendBody(1, `{"id":1,"kind":"list_dir","args":{"path":"Lg=="}}`)
	if err := <-p.served; !errors.Is(err, errUnauthenticated) {
		t.Errorf("Serve after a reused id: %v, want errUnauthenticated", err)
	}
}

func b64(s string) string {
	b, _ := json.Marshal([]byte(s))
	return strings.Trim(string(b), `"`)
}

// TestServeEnds covers how Serve returns: EOF at a frame boundary is a
// clean end, inside a frame an error, and shutdown answers last, after
// cancelling what runs.
func TestServeEnds(t *testing.T) {
	t.Run("EOF", func(t *testing.T) {
		p := newRawPeer(t, ServerConfig{Root: t.TempDir()})
		p.hello(1)
		_ = p.w.Close()
		if err := <-p.served; err != nil {
			t.Errorf("Serve: %v, want nil at a clean end", err)
		}
	})
	t.Run("EOF inside a frame", func(t *testing.T) {
		p := newRawPeer(t, ServerConfig{Root: t.TempDir()})
		p.send(taggedFrame(p.key, dirRequest, 1, `{"id":1}`)[:6])
		_ = p.w.Close()
		if err := <-p.served; !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("Serve: %v, want io.ErrUnexpectedEOF", err)
		}
	})
	t.Run("shutdown cancels a running command", func(t *testing.T) {
		dir := t.TempDir()
		p := newRawPeer(t, ServerConfig{Root: dir, Env: testEnv()})
		p.hello(3)
		p.sendBody(1, `{"id":1,"kind":"bash","args":{"command":"`+b64("touch started; sleep 600")+`","timeout_ms":600000}}`)
		waitFile(t, filepath.Join(dir, "started"))
		p.sendBody(2, `{"id":2,"kind":"shutdown"}`)
		p.expectError("running command", 1, errKindCanceled)
		if rep := p.recv(); rep.ID != 2 || rep.Error != nil || string(rep.Result) != "{}" {
			t.Errorf("shutdown reply %+v", rep)
		}
		if err := <-p.served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		reqR, _ := io.Pipe()
		served := make(chan error, 1)
		go func() { served <- Serve(ctx, reqR, io.Discard, ServerConfig{Root: t.TempDir()}) }()
		cancel()
		select {
		case err := <-served:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Serve: %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Serve did not return after its context ended")
		}
		_ = reqR.Close()
	})
	t.Run("missing root", func(t *testing.T) {
		err := Serve(t.Context(), strings.NewReader(""), io.Discard, ServerConfig{Root: filepath.Join(t.TempDir(), "nope")})
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Serve: %v, want os.ErrNotExist", err)
		}
	})
}

// TestHelloAndNonDumpable proves the server answers hello with its
// identity, and has made itself non-dumpable, in a real server process.
func TestHelloAndNonDumpable(t *testing.T) {
	dir := t.TempDir()
	c, cmd := connectProcess(t, []string{"-root", dir, "-display", "/work"})
	info, err := c.Hello(t.Context(), sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != ProtocolVersion || info.PID != cmd.Process.Pid || info.UID != os.Getuid() || info.GID != os.Getgid() || info.Root != "/work" {
		t.Errorf("hello %+v, want version %d, pid %d, our uid/gid, root /work", info, ProtocolVersion, cmd.Process.Pid)
	}
	if info.Dumpable {
		t.Error("the server process is dumpable")
	}
	// Display /work is what results quote, while the tree is dir.
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := c.ReadFile(t.Context(), "/work/f.txt", 0, 10); err != nil || out != "     1\tx" {
		t.Errorf("read /work/f.txt: %q, %v", out, err)
	}
}

func TestMeasure(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			dir := t.TempDir()
			buildTree(t, dir)
			c := tr.start(t, dir)
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = root.Close() }()
			for _, limits := range []sandbox.Limits{{}, {MaxEntries: 5}, {MaxBytes: 1}} {
				got, err := c.Measure(t.Context(), limits)
				if err != nil {
					t.Fatal(err)
				}
				want := directMeasure(t, root, dir, limits)
				if got.Bytes != want.Bytes || got.Entries != want.Entries || strings.Join(got.EscapingSymlinks, ",") != strings.Join(want.EscapingSymlinks, ",") || got.Violation != want.Violation || got.EscapingSymlinksTruncated {
					t.Errorf("limits %+v: got %+v, want %+v", limits, got, want)
				}
			}
		})
	}
}

// TestMeasureCutsEscapingList proves a reply lists at most 1000 escaping
// links, saying so, while the totals stay whole.
func TestMeasureCutsEscapingList(t *testing.T) {
	dir := t.TempDir()
	for i := range maxEscapingListed + 5 {
		if err := os.Symlink("/etc", filepath.Join(dir, fmt.Sprintf("l%04d", i))); err != nil {
			t.Fatal(err)
		}
	}
	c := startPipe(t, ServerConfig{Root: dir})
	m, err := c.Measure(t.Context(), sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Entries != maxEscapingListed+5 || len(m.EscapingSymlinks) != maxEscapingListed || !m.EscapingSymlinksTruncated || m.EscapingSymlinks[0] != "l0000" {
		t.Errorf("entries %d, %d listed, truncated %v, first %q", m.Entries, len(m.EscapingSymlinks), m.EscapingSymlinksTruncated, m.EscapingSymlinks[0])
	}
}

// directMeasure is fsops' own measurement of the tree, as host mode takes it.
func directMeasure(t *testing.T, root *os.Root, dir string, l sandbox.Limits) fsops.Measurement {
	t.Helper()
	m, err := fsops.New(root, dir).Measure(t.Context(), fsops.Limits{MaxBytes: l.MaxBytes, MaxEntries: l.MaxEntries})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
