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
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/fsops"
)

// rawPeer speaks frames to an in-process server directly, standing for a
// confused or hostile client.
type rawPeer struct {
	t      *testing.T
	w      *io.PipeWriter
	r      *io.PipeReader
	served chan error
}

func newRawPeer(t *testing.T, cfg ServerConfig) *rawPeer {
	t.Helper()
	reqR, reqW := io.Pipe()
	repR, repW := io.Pipe()
	p := &rawPeer{t: t, w: reqW, r: repR, served: make(chan error, 1)}
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

// recv reads one reply, within 10 s.
func (p *rawPeer) recv() reply {
	p.t.Helper()
	type got struct {
		body []byte
		err  error
	}
	ch := make(chan got, 1)
	go func() {
		body, err := readFrame(p.r, maxReplyFrame)
		ch <- got{body, err}
	}()
	select {
	case g := <-ch:
		if g.err != nil {
			p.t.Fatalf("recv: %v", g.err)
		}
		var rep reply
		if err := decodeStrict(g.body, &rep); err != nil {
			p.t.Fatalf("recv %q: %v", g.body, err)
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

// hello sends a valid hello and expects a result: the server still serves.
func (p *rawPeer) hello(id uint64) {
	p.t.Helper()
	p.send(rawFrame(`{"id":` + jsonID(id) + `,"kind":"hello","args":{"version":2}}`))
	if rep := p.recv(); rep.ID != id || rep.Error != nil || len(rep.Result) == 0 {
		p.t.Fatalf("hello %d: %+v", id, rep)
	}
}

// TestHostileClient proves malformed requests are answered with errors
// and the server keeps serving.
func TestHostileClient(t *testing.T) {
	p := newRawPeer(t, ServerConfig{Root: t.TempDir()})
	tests := []struct {
		name  string
		frame string
		id    uint64
		kind  string
	}{
		{"not JSON", "hello?", 0, errKindBadRequest},
		{"unknown envelope field", `{"id":1,"kind":"hello","args":{"version":2},"admin":true}`, 1, errKindBadRequest},
		{"unknown argument", `{"id":2,"kind":"read_file","args":{"path":"YQ==","offset":0,"limit":1,"follow":true}}`, 2, errKindBadRequest},
		{"unknown kind", `{"id":3,"kind":"exec","args":{}}`, 3, errKindBadRequest},
		{"missing arguments", `{"id":4,"kind":"read_file"}`, 4, errKindBadRequest},
		{"trailing data", `{"id":5,"kind":"hello","args":{"version":2}}{}`, 5, errKindBadRequest},
		{"id zero", `{"id":0,"kind":"hello","args":{"version":2}}`, 0, errKindBadRequest},
		{"wrong type", `{"id":6,"kind":"read_file","args":{"path":"YQ==","offset":"0","limit":1}}`, 6, errKindBadRequest},
		{"path not base64", `{"id":7,"kind":"list_dir","args":{"path":"%%"}}`, 7, errKindBadRequest},
		{"bash without timeout", `{"id":8,"kind":"bash","args":{"command":"dHJ1ZQ==","timeout_ms":0}}`, 8, errKindBadRequest},
		{"negative limits", `{"id":9,"kind":"measure","args":{"max_bytes":-1,"max_entries":0}}`, 9, errKindBadRequest},
		{"other version", `{"id":10,"kind":"hello","args":{"version":1}}`, 10, errKindVersion},
		{"shutdown with arguments", `{"id":11,"kind":"shutdown","args":{"now":true}}`, 11, errKindBadRequest},
	}
	for i, tc := range tests {
		p.send(rawFrame(tc.frame))
		p.expectError(tc.name, tc.id, tc.kind)
		p.hello(uint64(100 + i))
	}

	// An oversized frame is skipped whole and refused; the next frame is
	// read in step.
	big := make([]byte, frameHeader+maxRequestFrame+1)
	binary.BigEndian.PutUint32(big, maxRequestFrame+1)
	p.send(big)
	p.expectError("oversized frame", 0, errKindBadRequest)
	p.hello(200)

	// A cancellation of nothing gets no reply: the next reply is hello's.
	p.send(rawFrame(`{"id":77,"kind":"cancel"}`))
	p.hello(201)
}

// TestServerRefusesSecondCommandAndDuplicateID covers admission: one
// command at a time, ids unique among requests in flight.
func TestServerRefusesSecondCommandAndDuplicateID(t *testing.T) {
	dir := t.TempDir()
	p := newRawPeer(t, ServerConfig{Root: dir, Env: testEnv()})
	wait := `{"id":1,"kind":"bash","args":{"command":"` + b64("touch started; while [ ! -e go ]; do sleep 0.01; done") + `","timeout_ms":30000}}`
	p.send(rawFrame(wait))
	waitFile(t, filepath.Join(dir, "started"))
	p.send(rawFrame(`{"id":1,"kind":"list_dir","args":{"path":"Lg=="}}`))
	p.expectError("duplicate id", 1, errKindBadRequest)
	p.send(rawFrame(`{"id":2,"kind":"bash","args":{"command":"dHJ1ZQ==","timeout_ms":1000}}`))
	p.expectError("second command", 2, errKindBusy)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if rep := p.recv(); rep.ID != 1 || rep.Error != nil {
		t.Errorf("first command: %+v", rep)
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
		p.send(rawFrame(`{"id":1}`)[:6])
		_ = p.w.Close()
		if err := <-p.served; !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("Serve: %v, want io.ErrUnexpectedEOF", err)
		}
	})
	t.Run("shutdown cancels a running command", func(t *testing.T) {
		dir := t.TempDir()
		p := newRawPeer(t, ServerConfig{Root: dir, Env: testEnv()})
		p.send(rawFrame(`{"id":1,"kind":"bash","args":{"command":"` + b64("touch started; sleep 600") + `","timeout_ms":600000}}`))
		waitFile(t, filepath.Join(dir, "started"))
		p.send(rawFrame(`{"id":2,"kind":"shutdown"}`))
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
	c, cmd := startProcess(t, []string{"-root", dir, "-display", "/work"})
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
