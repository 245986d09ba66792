package toolbox

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"sync"
	"time"
)

// Default deadlines of a call (the sandbox contract's C-2).
const (
	// DefaultCallTimeout bounds a call other than bash and grep.
	DefaultCallTimeout = 30 * time.Second
	// DefaultCommandMargin is added to bash's and grep's own timeouts: the
	// server stops them at their timeout and must answer within the margin.
	DefaultCommandMargin = 10 * time.Second
	// DefaultCancelGrace bounds the wait for a cancelled call's reply.
	DefaultCancelGrace = 2 * time.Second
	// closeTimeout bounds Close's wait for the server's goodbye.
	closeTimeout = 5 * time.Second
	// queueDepth is how many frames may wait for the writer.
	queueDepth = 16
)

// Option adjusts a Client.
type Option func(*options)

type options struct {
	callTimeout   time.Duration
	commandMargin time.Duration
	cancelGrace   time.Duration
}

// WithCallTimeout sets the deadline of calls other than bash and grep.
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.callTimeout = d } }

// WithCommandMargin sets what bash's and grep's deadlines add to their
// timeouts.
func WithCommandMargin(d time.Duration) Option { return func(o *options) { o.commandMargin = d } }

// WithCancelGrace sets how long a call whose context ended waits for the
// server to answer its cancellation before declaring the server gone.
func WithCancelGrace(d time.Duration) Option { return func(o *options) { o.cancelGrace = d } }

// Client talks to one tool server. It is safe for concurrent use: calls
// are multiplexed over the stream by id (the watchdog measures while a
// command runs).
//
// Every call has a deadline. When the stream fails, a reply breaks the
// protocol, or a deadline passes, the client breaks: the call and every
// later one return an error wrapping ErrServerGone, Done is closed, and the
// streams are closed (when they are io.Closers) so nothing stays blocked
// on them. A call whose context ends asks the server to cancel it and
// returns the context's error.
type Client struct {
	r    io.Reader
	w    io.Writer
	opts options
	// key is the secret the hello hands the server; every frame after
	// it, both ways, is tagged with it (frame.go). A reply whose tag does
	// not match breaks the client: only the server knows the key.
	key []byte
	// queue feeds the single writer, so frames go out whole and in the
	// order they were queued (a cancel never overtakes its request).
	queue chan []byte

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]*call // guarded by mu; nil once broken
	greeted bool             // guarded by mu: a hello was sent
	err     error            // guarded by mu: why the client is unusable
	done    chan struct{}    // closed when err is set

	streamsOnce sync.Once
	closeErr    error // set by streamsOnce
	closeOnce   sync.Once
}

// call is a request waiting for its reply.
type call struct {
	kind string
	// ch receives exactly one value: the reply, or the error that broke
	// the client. Buffered, so the sender never waits.
	ch chan callResult
}

type callResult struct {
	d   decoded
	err error
}

// outRequest is request with args still to be encoded, so a large
// argument is encoded once, straight into the frame.
type outRequest struct {
	ID   uint64 `json:"id"`
	Kind string `json:"kind"`
	Args any    `json:"args,omitempty"`
}

// NewClient returns a client reading replies from r and writing requests
// to w (the server's stdout and stdin), and starts its reader and writer.
// Close it to stop them. r and w should be io.Closers (pipes, the attached
// connection): closing them is how a broken client unblocks a reader or
// writer stuck on a silent server.
func NewClient(r io.Reader, w io.Writer, opts ...Option) *Client {
	c := &Client{
		r:   r,
		w:   w,
		key: newKey(),
		opts: options{
			callTimeout:   DefaultCallTimeout,
			commandMargin: DefaultCommandMargin,
			cancelGrace:   DefaultCancelGrace,
		},
		queue:   make(chan []byte, queueDepth),
		pending: make(map[uint64]*call),
		done:    make(chan struct{}),
	}
	for _, o := range opts {
		o(&c.opts)
	}
	go c.readLoop()
	go c.writeLoop()
	return c
}

// newKey is a fresh secret for one server.
func newKey() []byte {
	key := make([]byte, keySize)
	// Since Go 1.24 Read never fails: the program crashes rather than
	// return a short or predictable key.
	_, _ = rand.Read(key)
	return key
}

// Done is closed once the client is unusable: the server is gone, or
// Close was called.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the client is unusable (wrapping ErrServerGone or ErrClosed),
// or nil while it is usable.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close asks the server to shut down, waiting at most 5 s (or the call
// timeout, if shorter) for its answer, then closes the streams. Later
// calls return ErrClosed. Idempotent; the error is closing w's.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		greeted := c.greeted
		c.mu.Unlock()
		// A server that was never greeted takes nothing but a hello; the
		// closed streams end it.
		if c.Err() == nil && greeted {
			// Best effort: a server that does not answer is not waited
			// for longer, and the closed streams end it anyway.
			_, _ = c.call(context.Background(), kindShutdown, nil, min(c.opts.callTimeout, closeTimeout))
		}
		c.fail(ErrClosed)
	})
	// The streams may have been closed by the reader breaking the client;
	// Do returns once that close is done, so closeErr is settled.
	c.closeStreams()
	return c.closeErr
}

// call sends one request and waits for its reply within timeout.
func (c *Client) call(ctx context.Context, kind string, args any, timeout time.Duration) (decoded, error) {
	if err := ctx.Err(); err != nil {
		return decoded{}, fmt.Errorf("%s: %w", kind, err)
	}
	id, ca, err := c.register(kind)
	if err != nil {
		return decoded{}, err
	}
	frame, err := sealFrame(c.key, dirRequest, id, outRequest{ID: id, Kind: kind, Args: args})
	if err == nil && bodySize(frame) > maxRequestFrame {
		err = fmt.Errorf("%s: %w: %d bytes, over the %d-byte limit", kind, ErrRequestTooLarge, bodySize(frame), maxRequestFrame)
	}
	if err != nil {
		c.forget(id)
		return decoded{}, err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case c.queue <- frame:
	case r := <-ca.ch: // the client broke (or a server answered early)
		return c.finish(ca, r)
	case <-ctx.Done():
		c.forget(id)
		return decoded{}, fmt.Errorf("%s: %w", kind, ctx.Err())
	case <-timer.C:
		return decoded{}, c.failCall(gone("%s: request not sent within %v", kind, timeout))
	}
	select {
	case r := <-ca.ch:
		return c.finish(ca, r)
	case <-ctx.Done():
		return decoded{}, c.cancel(ctx, id, ca)
	case <-timer.C:
		return decoded{}, c.failCall(gone("%s: no reply within %v", kind, timeout))
	}
}

// register allocates an id and records the call under it.
func (c *Client) register(kind string) (uint64, *call, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, nil, fmt.Errorf("%s: %w", kind, c.err)
	}
	c.nextID++
	if kind == kindHello {
		c.greeted = true
	}
	ca := &call{kind: kind, ch: make(chan callResult, 1)}
	c.pending[c.nextID] = ca
	return c.nextID, ca, nil
}

// forget drops a call whose request never went out.
func (c *Client) forget(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, id)
}

// finish turns a call's outcome into its return values.
func (c *Client) finish(ca *call, r callResult) (decoded, error) {
	switch {
	case r.err != nil:
		return decoded{}, r.err
	case r.d.canceled:
		// Only a server that is stopping cancels on its own.
		return decoded{}, c.failCall(gone("%s: the server cancelled the request", ca.kind))
	case r.d.remote != nil:
		return decoded{}, r.d.remote
	}
	return r.d, nil
}

// cancel asks the server to stop the call whose context ended and waits
// a short grace for its reply, so the stream stays in step; a server that
// does not answer in time is gone. The error is the context's.
func (c *Client) cancel(ctx context.Context, id uint64, ca *call) error {
	cause := fmt.Errorf("%s: %w", ca.kind, ctx.Err())
	frame, err := sealFrame(c.key, dirRequest, id, request{ID: id, Kind: kindCancel})
	if err != nil {
		return cause
	}
	grace := time.NewTimer(c.opts.cancelGrace)
	defer grace.Stop()
	select {
	case c.queue <- frame:
	case <-ca.ch:
		return cause
	case <-grace.C:
		c.fail(gone("%s: cancellation not sent within %v", ca.kind, c.opts.cancelGrace))
		return cause
	}
	select {
	case <-ca.ch: // "canceled", or a reply that crossed the cancellation
	case <-grace.C:
		c.fail(gone("%s: no reply within %v of cancelling it", ca.kind, c.opts.cancelGrace))
	}
	return cause
}

// failCall breaks the client with err, which names the failing call, and
// returns it.
func (c *Client) failCall(err error) error {
	c.fail(err)
	return err
}

// fail breaks the client: the first cause sticks, every waiting call gets
// it, and the streams are closed.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	close(c.done)
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, ca := range pending {
		ca.ch <- callResult{err: fmt.Errorf("%s: %w", ca.kind, err)}
	}
	c.closeStreams()
}

// closeStreams closes w and r when they are io.Closers, which unblocks the
// reader and writer. Only w's error is kept: closing a read end loses
// nothing, and r may be the same connection as w.
func (c *Client) closeStreams() {
	c.streamsOnce.Do(func() {
		if wc, ok := c.w.(io.Closer); ok {
			c.closeErr = wc.Close()
		}
		if rc, ok := c.r.(io.Closer); ok {
			_ = rc.Close()
		}
	})
}

// readLoop reads and routes replies until the stream or the protocol
// fails.
func (c *Client) readLoop() {
	for {
		f, err := readFrame(c.r, maxReplyFrame)
		if err != nil {
			c.fail(gone("read reply: %w", err))
			return
		}
		// Authenticated before it is even decoded: a frame that fails is
		// never a result, whatever it says.
		if err := f.open(c.key, dirReply); err != nil {
			c.fail(gone("read reply: %w", err))
			return
		}
		d, err := decodeReply(f.id, f.body, c.kindOf)
		if err != nil {
			c.fail(gone("%w", err))
			return
		}
		c.deliver(d)
	}
}

// kindOf is the kind of the request in flight under id.
func (c *Client) kindOf(id uint64) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ca, ok := c.pending[id]
	if !ok {
		return "", false
	}
	return ca.kind, true
}

// deliver hands a reply to its call. A call gone meanwhile went with the
// client breaking (calls never leave on their own once sent).
func (c *Client) deliver(d decoded) {
	c.mu.Lock()
	ca, ok := c.pending[d.id]
	delete(c.pending, d.id)
	c.mu.Unlock()
	if ok {
		ca.ch <- callResult{d: d}
	}
}

// writeLoop writes queued frames in order until the client breaks.
func (c *Client) writeLoop() {
	for {
		select {
		case frame := <-c.queue:
			if _, err := c.w.Write(frame); err != nil {
				c.fail(gone("write request: %w", err))
				return
			}
		case <-c.done:
			return
		}
	}
}
