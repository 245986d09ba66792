package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Limits of a proxy whose Config leaves them zero.
const (
	DefaultMaxConns      = 256
	DefaultDialTimeout   = 15 * time.Second
	DefaultIdleTimeout   = 5 * time.Minute
	DefaultHeaderTimeout = 30 * time.Second
	// maxHeaderBytes caps a request's header.
	maxHeaderBytes = 64 << 10
)

// Decision values.
const (
	Allowed = "allowed"
	Refused = "refused"
	// Failed is an allowed request whose host could not be reached (or
	// resolved).
	Failed = "failed"
)

// Decision is what the proxy did with one request.
type Decision struct {
	Time     time.Time `json:"time"`
	Decision string    `json:"decision"`
	Method   string    `json:"method"`
	Host     string    `json:"host"`
	Port     int       `json:"port"`
	// Addr is the address dialled, when one was.
	Addr   string `json:"addr,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Resolver looks names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config is a proxy's policy and limits.
type Config struct {
	// Allow is what may be reached.
	Allow Allowlist
	// Resolver resolves names; nil is net.DefaultResolver.
	Resolver Resolver
	// DeniedAddrs returns addresses refused besides the Forbidden ranges:
	// the host's own (its public addresses reach its listeners). It is
	// called for every request; nil refuses only what Forbidden does and
	// the proxy's own interface addresses.
	DeniedAddrs func() []netip.Addr
	// Log is told every decision; nil drops them. It is called from many
	// goroutines at once.
	Log func(Decision)
	// MaxConns bounds the client connections served at once (a further
	// one waits); 0 is DefaultMaxConns.
	MaxConns int
	// DialTimeout, IdleTimeout (a tunnel with no byte either way for this
	// long is closed) and HeaderTimeout (to read a request's header); 0
	// is the default.
	DialTimeout, IdleTimeout, HeaderTimeout time.Duration

	// dialer dials; tests stand in. nil is a net.Dialer.
	dialer func(ctx context.Context, network, addr string, control func(network, address string, c syscall.RawConn) error) (net.Conn, error)
}

// Proxy is an allowlisting HTTP forward proxy: CONNECT tunnels for TLS
// (any port the allowlist names) and absolute-form requests for plain
// http.
type Proxy struct {
	cfg    Config
	srv    *http.Server
	closed atomic.Bool
	// tunnels are the hijacked connections, closed by Close.
	mu      sync.Mutex
	tunnels map[net.Conn]struct{}
}

// New makes a proxy for cfg.
func New(cfg Config) *Proxy {
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = DefaultHeaderTimeout
	}
	if cfg.dialer == nil {
		cfg.dialer = func(ctx context.Context, network, addr string, control func(string, string, syscall.RawConn) error) (net.Conn, error) {
			d := net.Dialer{Control: control}
			return d.DialContext(ctx, network, addr)
		}
	}
	p := &Proxy{cfg: cfg, tunnels: map[net.Conn]struct{}{}}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: cfg.HeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		// The client's errors are its own (a hostile worker's malformed
		// requests): nothing of them reaches the operator's stderr.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	return p
}

// Serve serves client connections from l until Close; it returns nil
// after Close.
func (p *Proxy) Serve(l net.Listener) error {
	err := p.srv.Serve(&limitListener{Listener: l, sem: make(chan struct{}, p.cfg.MaxConns)})
	if p.closed.Load() || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops serving and closes every connection, tunnels included.
func (p *Proxy) Close() error {
	p.closed.Store(true)
	err := p.srv.Close()
	p.mu.Lock()
	for c := range p.tunnels {
		_ = c.Close()
	}
	p.mu.Unlock()
	return err
}

// ServeHTTP handles one request: CONNECT, or an absolute-form http
// request; anything else is refused with 400.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, port, err := Target(r)
	if err != nil {
		p.log(Decision{Decision: Refused, Method: r.Method, Host: host, Port: port, Reason: err.Error()})
		http.Error(w, "dirtywork egress proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.cfg.DialTimeout)
	defer cancel()
	upstream, addr, refusal, err := p.dial(ctx, host, port)
	d := Decision{Method: r.Method, Host: host, Port: port, Addr: addr}
	switch {
	case refusal != "":
		d.Decision, d.Reason = Refused, refusal
		p.log(d)
		http.Error(w, fmt.Sprintf("dirtywork egress proxy: %s:%d refused: %s", host, port, refusal), http.StatusForbidden)
		return
	case err != nil:
		d.Decision, d.Reason = Failed, err.Error()
		p.log(d)
		http.Error(w, fmt.Sprintf("dirtywork egress proxy: %s:%d: %v", host, port, err), http.StatusBadGateway)
		return
	}
	d.Decision = Allowed
	p.log(d)
	if r.Method == http.MethodConnect {
		p.tunnel(w, upstream)
		return
	}
	p.forward(w, r, upstream, host, port)
}

// errNotProxyRequest is a request that is neither CONNECT nor absolute
// form.
var errNotProxyRequest = errors.New("not a proxy request (CONNECT host:port, or an absolute http:// URL)")

// Target is the host and port a proxy request asks for: CONNECT's
// authority, or an absolute http:// URL's host and port (80 unless
// given). The host is as the request gives it, lower case, without IPv6
// brackets.
func Target(r *http.Request) (host string, port int, err error) {
	var hostport string
	switch {
	case r.Method == http.MethodConnect:
		hostport = r.RequestURI
		if r.URL != nil && r.URL.Host != "" {
			hostport = r.URL.Host
		}
		h, p, err := net.SplitHostPort(hostport)
		if err != nil {
			return "", 0, fmt.Errorf("CONNECT target %q is not host:port", hostport)
		}
		host, port, err = checkTarget(h, p)
		return host, port, err
	case r.URL != nil && r.URL.IsAbs():
		if !strings.EqualFold(r.URL.Scheme, "http") {
			return "", 0, fmt.Errorf("scheme %q: only http:// is forwarded (https goes through CONNECT)", r.URL.Scheme)
		}
		if r.URL.User != nil {
			return "", 0, errors.New("a URL with user information")
		}
		h, p := r.URL.Hostname(), r.URL.Port()
		if p == "" {
			if strings.HasSuffix(r.URL.Host, ":") {
				return "", 0, fmt.Errorf("URL host %q has an empty port", r.URL.Host)
			}
			p = "80"
		}
		host, port, err = checkTarget(h, p)
		return host, port, err
	}
	return "", 0, errNotProxyRequest
}

// checkTarget validates a request's host and port.
func checkTarget(h, p string) (string, int, error) {
	port, err := parsePort(p)
	if err != nil {
		return strings.ToLower(h), 0, err
	}
	host, err := normalHost(h)
	if err != nil {
		return strings.ToLower(h), port, fmt.Errorf("host %q: %w", h, err)
	}
	return host, port, nil
}

// dial vets host:port and connects to it: the allowlist first, then every
// address the name resolves to (or the literal address), then the
// connection itself, each to a vetted address and checked again as it is
// made. A refusal is the reason text; err is a failure of an allowed
// request (no answer, nothing reachable).
func (p *Proxy) dial(ctx context.Context, host string, port int) (conn net.Conn, addr, refusal string, err error) {
	if !p.cfg.Allow.Allows(host, port) {
		return nil, "", "not on the allowlist (add it with --allow-host)", nil
	}
	var candidates []netip.Addr
	literal := false
	if a, perr := netip.ParseAddr(host); perr == nil {
		candidates, literal = []netip.Addr{a}, true
	} else {
		candidates, err = p.cfg.Resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, "", "", fmt.Errorf("resolve: %w", err)
		}
		if len(candidates) == 0 {
			return nil, "", "", errors.New("resolve: no address")
		}
	}
	denied := p.denied()
	var vetted []netip.Addr
	var why []string
	for _, a := range candidates {
		if r := p.refusal(a, denied); r != "" {
			why = append(why, a.String()+": "+r)
			continue
		}
		vetted = append(vetted, a.Unmap().WithZone(""))
	}
	switch {
	case len(vetted) == 0 && literal:
		return nil, "", "a forbidden address (" + strings.Join(why, "; ") + ")", nil
	case len(vetted) == 0:
		return nil, "", "resolves only to forbidden addresses (" + strings.Join(why, "; ") + ")", nil
	}
	var errs []error
	for _, a := range vetted {
		target := netip.AddrPortFrom(a, uint16(port)).String()
		c, derr := p.cfg.dialer(ctx, "tcp", target, p.control(denied))
		if derr == nil {
			return c, target, "", nil
		}
		errs = append(errs, derr)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, "", "", errors.Join(errs...)
}

// refusal is why a may not be dialled: a Forbidden range, or one of the
// denied addresses; "" when it may.
func (p *Proxy) refusal(a netip.Addr, denied map[netip.Addr]bool) string {
	if r := Forbidden(a); r != "" {
		return r
	}
	if denied[a.Unmap().WithZone("")] {
		return "an address of the host"
	}
	return ""
}

// denied are the addresses refused besides the Forbidden ranges: the
// configured ones and this machine's own.
func (p *Proxy) denied() map[netip.Addr]bool {
	m := map[netip.Addr]bool{}
	if p.cfg.DeniedAddrs != nil {
		for _, a := range p.cfg.DeniedAddrs() {
			m[a.Unmap().WithZone("")] = true
		}
	}
	for _, a := range InterfaceAddrs() {
		m[a] = true
	}
	return m
}

// InterfaceAddrs are the addresses of this network namespace's interfaces
// (none when they cannot be listed).
func InterfaceAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if pfx, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, pfx.Addr().Unmap().WithZone(""))
		}
	}
	return out
}

// control checks, as the socket connects, the address it connects to: the
// last word on what is dialled, whatever resolved it.
func (p *Proxy) control(denied map[netip.Addr]bool) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("dial %q: not an address", address)
		}
		if r := p.refusal(ap.Addr(), denied); r != "" {
			return fmt.Errorf("dial %s: %s", address, r)
		}
		return nil
	}
}

// log reports d.
func (p *Proxy) log(d Decision) {
	if p.cfg.Log == nil {
		return
	}
	d.Time = time.Now().UTC()
	p.cfg.Log(d)
}

// tunnel answers CONNECT with 200 and copies bytes both ways until either
// side closes or nothing moved for IdleTimeout.
func (p *Proxy) tunnel(w http.ResponseWriter, upstream net.Conn) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = upstream.Close()
		http.Error(w, "dirtywork egress proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		_ = upstream.Close()
		return
	}
	if !p.track(client, upstream) {
		return
	}
	defer p.untrack(client, upstream)
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	// The client may have sent its first bytes (a TLS hello) with the
	// request: they wait in buf.
	var from io.Reader = client
	if n := buf.Reader.Buffered(); n > 0 {
		from = io.MultiReader(io.LimitReader(buf.Reader, int64(n)), client)
	}
	p.pipe(client, upstream, from)
}

// track records a tunnel's connections for Close; false (and both
// closed) when the proxy is closing.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.tunnels[c] = struct{}{}
	}
	return true
}

// untrack closes and forgets a tunnel's connections.
func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(p.tunnels, c)
	}
}

// pipe copies client (read through from) to upstream and back until one
// side ends or the pair is idle for IdleTimeout.
func (p *Proxy) pipe(client, upstream net.Conn, from io.Reader) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	done := make(chan struct{}, 2)
	cp := func(dst net.Conn, src io.Reader) {
		_, _ = io.Copy(activity{dst, &last}, src)
		// Half-close where the connection can, so a request body's end
		// reaches the server while its answer still flows.
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
		done <- struct{}{}
	}
	go cp(upstream, from)
	go cp(client, upstream)
	tick := time.NewTicker(min(p.cfg.IdleTimeout/4, time.Second))
	defer tick.Stop()
	for ended := 0; ended < 2; {
		select {
		case <-done:
			ended++
		case <-tick.C:
			if time.Since(time.Unix(0, last.Load())) > p.cfg.IdleTimeout {
				_ = client.Close()
				_ = upstream.Close()
			}
		}
	}
}

// activity is a writer that notes when bytes went through.
type activity struct {
	w    io.Writer
	last *atomic.Int64
}

func (a activity) Write(b []byte) (int, error) {
	a.last.Store(time.Now().UnixNano())
	return a.w.Write(b)
}

// hopHeaders are the hop-by-hop headers a proxy does not pass on (RFC
// 9110 section 7.6.1, and the proxy-only ones).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// stripHop removes the hop-by-hop headers, those Connection names too.
func stripHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// forward sends a plain http request over upstream (one request per
// connection) and copies the answer back. The Host header is the URL's
// host: the one vetted.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, upstream net.Conn, host string, port int) {
	if !p.track(upstream) {
		return
	}
	defer p.untrack(upstream)
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header = r.Header.Clone()
	stripHop(out.Header)
	out.Host = host
	if port != 80 {
		out.Host = net.JoinHostPort(host, strconv.Itoa(port))
	}
	out.URL.Scheme, out.URL.Host = "", ""
	out.Close = true
	_ = upstream.SetDeadline(time.Now().Add(p.cfg.IdleTimeout))
	if err := out.Write(upstream); err != nil {
		http.Error(w, "dirtywork egress proxy: send the request: "+err.Error(), http.StatusBadGateway)
		return
	}
	resp, err := http.ReadResponse(bufio.NewReader(upstream), out)
	if err != nil {
		http.Error(w, "dirtywork egress proxy: read the answer: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	stripHop(resp.Header)
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, deadlineReader{resp.Body, upstream, p.cfg.IdleTimeout})
}

// deadlineReader moves the connection's deadline on before each read, so
// an answer that keeps coming is not cut and one that stalls is.
type deadlineReader struct {
	r    io.Reader
	c    net.Conn
	idle time.Duration
}

func (d deadlineReader) Read(b []byte) (int, error) {
	_ = d.c.SetDeadline(time.Now().Add(d.idle))
	return d.r.Read(b)
}

// limitListener accepts at most cap(sem) connections at once; a further
// Accept waits for one to close.
type limitListener struct {
	net.Listener
	sem chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.sem <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

// limitConn gives its place back once, when closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
