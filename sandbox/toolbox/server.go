package toolbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/dirtywork/dirtywork/sandbox/fsops"
	"github.com/dirtywork/dirtywork/sandbox/seal"
)

// maxInFlight bounds the requests a server runs at once; more are
// answered "busy". The engine sends one at a time, the watchdog one more.
const maxInFlight = 8

// ServerConfig is what a tool server serves.
type ServerConfig struct {
	// Root is the directory holding the tree (e.g. /work). Commands run
	// in it.
	Root string
	// Display is the absolute path the model knows the tree by; "" is
	// Root. Results quote it, and absolute paths are read against it.
	Display string
	// Env is the commands' whole environment. Nil is an empty one, never
	// the server's own.
	Env []string
	// Bash is the shell commands run with; "" is /bin/bash.
	Bash string
	// MaxFileBytes, when positive, caps the size of any file a command
	// writes (RLIMIT_FSIZE, set with ulimit -f in whole KiB): a command
	// passing it dies of SIGXFSZ, exit code 153.
	MaxFileBytes int64
	// Subreaper makes the process a child subreaper that reaps every
	// child it adopts as soon as it exits and, after every command, kills
	// whatever children are left, so a job that left the command's
	// process group (setsid, a double fork) dies with it too. Set it only
	// for a process that runs nothing but the server, as Main does: every
	// child of the process is reaped and killed. It is what the server
	// needs to be its PID namespace's init (pid 1 of a container, or of a
	// namespace a host jail makes).
	Subreaper bool
	// MeasureOnly refuses every request but hello and measure: the
	// server of a container that only measures a tree it mounts
	// read-only, from outside the worker's reach.
	MeasureOnly bool
	// OOMEvents are files that may hold the server's cgroup's count of
	// OOM kills as an "oom_kill N" line (cgroup v2's memory.events, v1's
	// memory.oom_control); the first that does is read before and after
	// every command, and a count that grew is reported with its result.
	// A container's own cgroup, that is: a daemon's event for the kill
	// can come after the command's reply.
	OOMEvents []string
}

// oomKills is the first count of OOM kills cfg.OOMEvents holds, and
// whether one does.
func (c ServerConfig) oomKills() (int64, bool) {
	for _, path := range c.OOMEvents {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "oom_kill "); ok {
				if n, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64); err == nil {
					return n, true
				}
			}
		}
	}
	return 0, false
}

// CgroupOOMEvents are where a container's tool server finds its cgroup's
// OOM kills: cgroup v2, then v1 (the container's own memory cgroup is
// what it sees at either place).
var CgroupOOMEvents = []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"}

// Serve answers requests read from in with replies written to out until
// the client asks it to shut down (nil), in ends (nil at a frame
// boundary, an error inside a frame), a reply cannot be written, or ctx
// ends. Requests still running then are cancelled and waited for. A
// reader blocked on in when Serve returns for ctx stays blocked until in
// yields.
//
// Serve first makes the process non-dumpable: the commands it runs are
// the same user, who could otherwise ptrace it, or open its stream
// through /proc/<pid>/fd, and answer in its name. The setting is for the
// whole process and outlives Serve; a command's exec resets it for the
// command alone.
func Serve(ctx context.Context, in io.Reader, out io.Writer, cfg ServerConfig) error {
	if err := setNonDumpable(); err != nil {
		return fmt.Errorf("toolbox: make the server non-dumpable: %w", err)
	}
	var rp *reaper
	if cfg.Subreaper {
		if err := becomeSubreaper(); err != nil {
			return fmt.Errorf("toolbox: become a child subreaper: %w", err)
		}
		reapCtx, stopReaping := context.WithCancel(context.WithoutCancel(ctx))
		defer stopReaping()
		rp = startReaper(reapCtx)
	}
	root, err := os.OpenRoot(cfg.Root)
	if err != nil {
		return fmt.Errorf("toolbox: open tree: %w", err)
	}
	defer func() { _ = root.Close() }() // a directory opened for reading
	display := cfg.Display
	if display == "" {
		display = cfg.Root
	}
	if !path.IsAbs(display) {
		return fmt.Errorf("toolbox: display path %q is not absolute", display)
	}
	s := &server{
		cfg:      cfg,
		fs:       fsops.New(root, display),
		bash:     cfg.Bash,
		env:      cfg.Env,
		out:      out,
		inflight: make(map[uint64]context.CancelFunc),
		writeErr: make(chan error, 1),
		reaper:   rp,
		seen:     make(map[uint64]bool),
	}
	if s.bash == "" {
		s.bash = "/bin/bash"
	}
	if s.env == nil {
		s.env = []string{}
	}
	return s.serve(ctx, in)
}

// server is one Serve call's state.
type server struct {
	cfg ServerConfig
	fs  *fsops.FS
	// reaper reaps every child but the commands' own (Subreaper only).
	reaper *reaper
	bash   string
	env    []string

	// key tags every frame both ways; the hello brings it, and only the
	// request loop sets it, before any reply can be sent.
	key []byte
	// seen holds every request id used (only the request loop touches
	// it): an id comes once, so a replayed frame is refused.
	seen map[uint64]bool

	wmu sync.Mutex // serialises writes to out
	out io.Writer
	// writeErr receives the first failed write; the loop then ends.
	writeErr chan error

	mu       sync.Mutex
	inflight map[uint64]context.CancelFunc // guarded by mu
	bashBusy bool                          // guarded by mu: a command runs
	greeted  bool                          // guarded by mu: the hello was answered
	// budget holds the tree to the caps the hello gave; nil before it.
	budget *fsops.Budget // guarded by mu
	// sealed is the manifest of the tree as the last seal left it, which
	// verify checks the tree against; nil before a seal.
	sealed *seal.Manifest // guarded by mu
	wg     sync.WaitGroup
}

// inbound is what the reader got: a frame, an oversized frame it
// skipped, or the error that ended the stream.
type inbound struct {
	frame    wireFrame
	tooLarge uint32
	err      error
}

// errUnauthenticated is a request frame the server cannot take as its
// client's: the first frame is not a well-formed hello, or a later one
// fails its tag. Serving ends: whoever wrote it is not the client, and
// the stream can no longer be trusted.
var errUnauthenticated = errors.New("unauthenticated request")

// serve is the request loop.
func (s *server) serve(ctx context.Context, in io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	quit := make(chan struct{})
	defer func() {
		close(quit)
		cancel()
		s.wg.Wait()
	}()
	frames := make(chan inbound)
	go readRequests(in, frames, quit)
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("toolbox: serve: %w", ctx.Err())
		case err := <-s.writeErr:
			return fmt.Errorf("toolbox: write reply: %w", err)
		case f := <-frames:
			switch {
			case errors.Is(f.err, io.EOF):
				return nil
			case f.err != nil:
				return fmt.Errorf("toolbox: read request: %w", f.err)
			case f.tooLarge > 0 && s.key == nil:
				return fmt.Errorf("toolbox: %w: a first frame of %d bytes", errUnauthenticated, f.tooLarge)
			case f.tooLarge > 0:
				s.replyError(0, errKindBadRequest, fmt.Sprintf("request frame of %d bytes is over the %d-byte limit", f.tooLarge, maxRequestFrame))
				continue
			}
			if err := s.authenticate(f.frame); err != nil {
				return fmt.Errorf("toolbox: %w", err)
			}
			id, stop, err := s.dispatch(ctx, f.frame)
			if err != nil {
				return fmt.Errorf("toolbox: %w", err)
			}
			if stop {
				// Requests still running are cancelled and answer
				// first; the goodbye is the last frame.
				cancel()
				s.wg.Wait()
				s.reply(id, emptyResult{})
				return nil
			}
		}
	}
}

// authenticate checks a request frame's tag. The first frame must be the
// client's hello, which brings the key: nothing else runs before it, so
// no command of the worker's can exist yet to have written it. Every
// later frame must carry the tag of that key.
func (s *server) authenticate(f wireFrame) error {
	if s.key != nil {
		if err := f.open(s.key, dirRequest); err != nil {
			return fmt.Errorf("%w: %w", errUnauthenticated, err)
		}
		return nil
	}
	var req request
	var args helloArgs
	switch {
	case decodeStrict(f.body, &req) != nil || req.Kind != kindHello || req.ID != f.id:
		return fmt.Errorf("%w: the first request is not a hello", errUnauthenticated)
	case json.Unmarshal(req.Args, &args) != nil || len(args.Key) != keySize:
		return fmt.Errorf("%w: the hello carries no %d-byte key", errUnauthenticated, keySize)
	}
	if err := f.open(args.Key, dirRequest); err != nil {
		return fmt.Errorf("%w: %w", errUnauthenticated, err)
	}
	s.key = args.Key
	return nil
}

// readRequests reads frames into frames until the stream ends or quit is
// closed. An oversized frame is skipped whole, so the stream stays in step.
func readRequests(in io.Reader, frames chan<- inbound, quit <-chan struct{}) {
	for {
		var f inbound
		n, err := readHeader(in)
		switch {
		case err != nil:
			f.err = err
		case n > maxRequestFrame+idSize+tagSize:
			if _, err := io.CopyN(io.Discard, in, int64(n)); err != nil {
				f.err = noEOF(err)
			} else {
				f.tooLarge = n
			}
		default:
			var p []byte
			if p, f.err = readBody(in, n); f.err == nil {
				f.frame, f.err = splitPayload(p)
			}
		}
		select {
		case frames <- f:
		case <-quit:
			return
		}
		if f.err != nil {
			return
		}
	}
}

// dispatch decodes one authenticated request and starts it; a malformed
// or refused one is answered at once. It reports a shutdown request and
// its id; an error ends serving.
func (s *server) dispatch(ctx context.Context, f wireFrame) (id uint64, shutdown bool, err error) {
	var req request
	if err := decodeStrict(f.body, &req); err != nil {
		s.replyError(f.id, errKindBadRequest, "decode request: "+err.Error())
		return 0, false, nil
	}
	switch {
	case req.ID != f.id:
		// Only a broken client tags one id and sends another.
		return 0, false, fmt.Errorf("request %d framed as %d", req.ID, f.id)
	case req.ID == 0:
		s.replyError(0, errKindBadRequest, "request id 0")
		return 0, false, nil
	}
	if req.Kind != kindCancel {
		// A cancel names the request it cancels; anything else under an
		// id seen before is a replayed frame.
		if s.seen[req.ID] {
			return 0, false, fmt.Errorf("%w: request id %d used again", errUnauthenticated, req.ID)
		}
		s.seen[req.ID] = true
	}
	switch req.Kind {
	case kindCancel, kindShutdown:
		if len(req.Args) > 0 && string(req.Args) != "{}" && string(req.Args) != "null" {
			s.replyError(req.ID, errKindBadRequest, req.Kind+" takes no arguments")
			return 0, false, nil
		}
		if req.Kind == kindShutdown {
			return req.ID, true, nil
		}
		s.cancelRequest(req.ID)
		return 0, false, nil
	}
	run, err := s.prepare(req.Kind, req.Args)
	if err != nil {
		s.replyError(req.ID, errKindBadRequest, fmt.Sprintf("%s: %v", req.Kind, err))
		return 0, false, nil
	}
	reqCtx, release, kind, msg := s.admit(ctx, req.ID, exclusive(req.Kind))
	if kind != "" {
		s.replyError(req.ID, kind, msg)
		return 0, false, nil
	}
	s.wg.Go(func() {
		result, err := s.runGuarded(reqCtx, run)
		var kind string
		if err != nil {
			kind = errorKind(reqCtx, err) // before release cancels reqCtx
		}
		// Released before the reply goes out, so the client's next
		// command never finds this one still running.
		release()
		if err != nil {
			s.replyError(req.ID, kind, err.Error())
			return
		}
		s.reply(req.ID, result)
	})
	return 0, false, nil
}

// admit registers a request in flight, or says why it cannot run: an id
// already in flight, too many requests, or a second command. release
// unregisters it.
func (s *server) admit(ctx context.Context, id uint64, isBash bool) (reqCtx context.Context, release func(), kind, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.inflight[id] != nil:
		return nil, nil, errKindBadRequest, fmt.Sprintf("request %d is already in flight", id)
	case len(s.inflight) >= maxInFlight:
		return nil, nil, errKindBusy, fmt.Sprintf("%d requests in flight", len(s.inflight))
	case isBash && s.bashBusy:
		return nil, nil, errKindBusy, "a command is already running"
	}
	reqCtx, cancel := context.WithCancel(ctx)
	s.inflight[id] = cancel
	if isBash {
		s.bashBusy = true
	}
	return reqCtx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		cancel()
		delete(s.inflight, id)
		if isBash {
			s.bashBusy = false
		}
	}, "", ""
}

// cancelRequest cancels the request in flight under id; one already
// answered (or never seen) is nothing to do.
func (s *server) cancelRequest(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cancel := s.inflight[id]; cancel != nil {
		cancel()
	}
}

// runGuarded runs a request, turning a panic into an internal error so
// one bad request does not take the server down.
func (s *server) runGuarded(ctx context.Context, run job) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			result, err = nil, fmt.Errorf("%w: panic: %v", errPanic, p)
		}
	}()
	return run(ctx)
}

// errPanic marks a request that panicked.
var errPanic = errors.New("internal failure")

// errorKind classifies a failed request: its own cancellation, a closed
// tree, anything else internal.
func errorKind(ctx context.Context, err error) string {
	switch {
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return errKindCanceled
	case errors.Is(err, os.ErrClosed):
		return errKindClosedRoot
	case errors.Is(err, errVersion):
		return errKindVersion
	case errors.Is(err, errGreeted):
		return errKindBadRequest
	}
	return errKindInternal
}

// outReply is reply with its result still to be encoded.
type outReply struct {
	ID     uint64     `json:"id"`
	Result any        `json:"result,omitempty"`
	Error  *wireError `json:"error,omitempty"`
}

// reply sends a result.
func (s *server) reply(id uint64, result any) { s.send(outReply{ID: id, Result: result}) }

// replyError sends an error reply.
func (s *server) replyError(id uint64, kind, msg string) {
	s.send(outReply{ID: id, Error: &wireError{Kind: kind, Message: msg}})
}

// send writes one reply. A reply the client would refuse as oversized is
// replaced by an internal error, so the server never breaks the stream
// itself. The first write failure ends the loop.
func (s *server) send(r outReply) {
	frame, err := sealFrame(s.key, dirReply, r.ID, r)
	if err == nil && bodySize(frame) > maxReplyFrame {
		err = fmt.Errorf("reply of %d bytes is over the %d-byte limit", bodySize(frame), maxReplyFrame)
	}
	if err != nil {
		frame, err = sealFrame(s.key, dirReply, r.ID, outReply{ID: r.ID, Error: &wireError{Kind: errKindInternal, Message: err.Error()}})
		if err != nil {
			return // a fixed small struct always encodes
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.out.Write(frame); err != nil {
		select {
		case s.writeErr <- err:
		default:
		}
	}
}
