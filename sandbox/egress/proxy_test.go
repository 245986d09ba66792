package egress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeNet is a resolver and dialer for the proxy under test: names resolve
// as the table says (each lookup counted), and a dial to a public address
// reaches the local server that stands for it.
type fakeNet struct {
	mu      sync.Mutex
	names   map[string][][]netip.Addr // successive answers; the last repeats
	lookups map[string]int
	routes  map[netip.AddrPort]string // a public address -> a local listener
	dialled []string
}

func (f *fakeNet) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	answers, ok := f.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	n := f.lookups[host]
	f.lookups[host]++
	return answers[min(n, len(answers)-1)], nil
}

func (f *fakeNet) dial(ctx context.Context, network, addr string, control func(string, string, syscall.RawConn) error) (net.Conn, error) {
	f.mu.Lock()
	f.dialled = append(f.dialled, addr)
	f.mu.Unlock()
	// The real dialer runs control with the address the socket connects
	// to; so does this one.
	if err := control(network, addr, nil); err != nil {
		return nil, err
	}
	ap := netip.MustParseAddrPort(addr)
	local, ok := f.routes[ap]
	if !ok {
		return nil, fmt.Errorf("dial %s: %w", addr, syscall.ECONNREFUSED)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", local)
}

func (f *fakeNet) dialledAddrs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.dialled...)
}

// proxyFixture is a proxy on a unix socket with a fake network, and the
// decisions it logged.
type proxyFixture struct {
	net       *fakeNet
	socket    string
	mu        sync.Mutex
	decisions []Decision
}

func (p *proxyFixture) logged() []Decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Decision(nil), p.decisions...)
}

// startProxy serves a proxy for allow with fake names; public addresses
// 203.0.113.10:443 and 203.0.113.10:80 reach an echo-ish TLS stand-in and
// an HTTP server.
func startProxy(t *testing.T, allow string, denied ...netip.Addr) *proxyFixture {
	t.Helper()
	rules, err := ParseRules(allow)
	if err != nil {
		t.Fatal(err)
	}
	echo := listenLocal(t, func(c net.Conn) {
		defer func() { _ = c.Close() }()
		_, _ = io.Copy(c, c)
	})
	web := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "host=%s uri=%s proxy-auth=%q", r.Host, r.RequestURI, r.Header.Get("Proxy-Authorization"))
	}), ReadHeaderTimeout: 5 * time.Second}
	wl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = web.Serve(wl) }()
	t.Cleanup(func() { _ = web.Close() })
	fn := &fakeNet{
		names: map[string][][]netip.Addr{
			"registry.test":    {{netip.MustParseAddr("203.0.113.10")}},
			"private.test":     {{netip.MustParseAddr("10.0.0.1")}},
			"metadata.test":    {{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("::ffff:127.0.0.1")}},
			"mixed.test":       {{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("203.0.113.10")}},
			"rebind.test":      {{netip.MustParseAddr("203.0.113.10")}, {netip.MustParseAddr("127.0.0.1")}},
			"hostaddr.test":    {{netip.MustParseAddr("198.51.100.2")}},
			"unreachable.test": {{netip.MustParseAddr("203.0.113.99")}},
		},
		lookups: map[string]int{},
		routes: map[netip.AddrPort]string{
			netip.MustParseAddrPort("203.0.113.10:443"): echo,
			netip.MustParseAddrPort("203.0.113.10:80"):  wl.Addr().String(),
			netip.MustParseAddrPort("198.51.100.2:443"): echo,
		},
	}
	pf := &proxyFixture{net: fn, socket: filepath.Join(t.TempDir(), "p.sock")}
	p := New(Config{
		Allow: rules, Resolver: fn, DeniedAddrs: func() []netip.Addr { return denied },
		Log: func(d Decision) {
			pf.mu.Lock()
			pf.decisions = append(pf.decisions, d)
			pf.mu.Unlock()
		},
		DialTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second, HeaderTimeout: 5 * time.Second,
		dialer: fn.dial,
	})
	l, err := ListenUnix(pf.socket)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()
	t.Cleanup(func() {
		_ = p.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return pf
}

// listenLocal serves handle on a loopback listener and returns its
// address.
func listenLocal(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return l.Addr().String()
}

// connect sends CONNECT target through the proxy and returns the status
// line's code and the connection (open when 200).
func (p *proxyFixture) connect(t *testing.T, target string) (int, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("unix", p.socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		t.Logf("CONNECT %s: %d %s", target, resp.StatusCode, body)
	}
	return resp.StatusCode, c, br
}

// connectStatus reads the answer to a CONNECT.
func connectStatus(t *testing.T, br *bufio.Reader) int {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("read the answer to CONNECT: %v", err)
	}
	_ = resp.Body.Close() // none after 200: the tunnel follows
	return resp.StatusCode
}

func TestConnectAllowed(t *testing.T) {
	p := startProxy(t, "registry.test")
	code, c, br := p.connect(t, "registry.test:443")
	if code != http.StatusOK {
		t.Fatalf("CONNECT to an allowed host: %d", code)
	}
	if _, err := io.WriteString(c, "hello through the tunnel\n"); err != nil {
		t.Fatal(err)
	}
	line, err := br.ReadString('\n')
	if err != nil || line != "hello through the tunnel\n" {
		t.Fatalf("echo through the tunnel: %q, %v", line, err)
	}
	d := p.logged()
	if len(d) != 1 || d[0].Decision != Allowed || d[0].Host != "registry.test" || d[0].Port != 443 || d[0].Addr != "203.0.113.10:443" {
		t.Fatalf("decisions %+v", d)
	}
}

func TestConnectSendsEarlyBytes(t *testing.T) {
	// A client that sends its first bytes right behind CONNECT (as TLS
	// clients may) must not lose them.
	p := startProxy(t, "registry.test")
	c, err := net.Dial("unix", p.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	fmt.Fprint(c, "CONNECT registry.test:443 HTTP/1.1\r\nHost: registry.test:443\r\n\r\nearly bytes\n")
	br := bufio.NewReader(c)
	if code := connectStatus(t, br); code != http.StatusOK {
		t.Fatalf("CONNECT: %d", code)
	}
	line, err := br.ReadString('\n')
	if err != nil || line != "early bytes\n" {
		t.Fatalf("early bytes came back as %q, %v", line, err)
	}
}

func TestConnectRefused(t *testing.T) {
	tests := []struct {
		name, allow, target, reason string
	}{
		{"not on the list", "registry.test", "other.test:443", "not on the allowlist"},
		{"port not on the list", "registry.test", "registry.test:22", "not on the allowlist"},
		{"resolves to a private address", "private.test", "private.test:443", "private"},
		{"resolves to metadata and mapped loopback", "metadata.test", "metadata.test:443", "link-local"},
		{"loopback literal", "*", "127.0.0.1:443", "loopback"},
		{"metadata literal", "*", "169.254.169.254:80", "link-local"},
		{"mapped loopback literal", "*", "[::ffff:127.0.0.1]:443", "loopback"},
		{"ipv6 loopback literal", "*", "[::1]:443", "loopback"},
		{"unspecified literal", "*", "0.0.0.0:443", "unspecified"},
		{"docker gateway literal", "*", "172.17.0.1:443", "private"},
		{"ULA literal", "*", "[fd00::1]:443", "unique local"},
		{"explicitly allowed private literal", "10.0.0.5", "10.0.0.5:443", "private"},
		{"an address of the host", "hostaddr.test", "hostaddr.test:443", "an address of the host"},
		{"bad target", "*", "nohost", "not host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startProxy(t, tt.allow, netip.MustParseAddr("198.51.100.2"))
			code, _, _ := p.connect(t, tt.target)
			if code == http.StatusOK {
				t.Fatalf("CONNECT %s was let through", tt.target)
			}
			d := p.logged()
			if len(d) != 1 || d[0].Decision != Refused || !strings.Contains(d[0].Reason, tt.reason) {
				t.Fatalf("decisions %+v, want one refusal naming %q", d, tt.reason)
			}
			if got := p.net.dialledAddrs(); len(got) != 0 {
				t.Fatalf("a refused request dialled %q", got)
			}
		})
	}
}

func TestMixedAnswerDialsOnlyPublic(t *testing.T) {
	p := startProxy(t, "mixed.test")
	if code, _, _ := p.connect(t, "mixed.test:443"); code != http.StatusOK {
		t.Fatalf("CONNECT: %d", code)
	}
	if got := p.net.dialledAddrs(); len(got) != 1 || got[0] != "203.0.113.10:443" {
		t.Fatalf("dialled %q, want only the public address", got)
	}
}

func TestRebindingNeverReachesADial(t *testing.T) {
	// The name answers a public address first and loopback after: the
	// proxy resolves once per request and dials what it vetted.
	p := startProxy(t, "rebind.test")
	if code, _, _ := p.connect(t, "rebind.test:443"); code != http.StatusOK {
		t.Fatalf("first CONNECT: %d", code)
	}
	if code, _, _ := p.connect(t, "rebind.test:443"); code == http.StatusOK {
		t.Fatal("the second answer (loopback) was let through")
	}
	for _, a := range p.net.dialledAddrs() {
		if a != "203.0.113.10:443" {
			t.Fatalf("dialled %s", a)
		}
	}
	if n := p.net.lookups["rebind.test"]; n != 2 {
		t.Fatalf("%d lookups for two requests", n)
	}
}

func TestDialControlRefusesForbiddenAddress(t *testing.T) {
	// Whatever the dial is given, the control hook refuses a forbidden
	// address as the socket connects.
	p := New(Config{Allow: Allowlist{{Wildcard: true}}})
	for _, a := range []string{"127.0.0.1:443", "[::1]:443", "10.1.1.1:80", "[::ffff:169.254.169.254]:80"} {
		if err := p.control(nil)("tcp", a, nil); err == nil {
			t.Errorf("control let %s through", a)
		}
	}
	if err := p.control(map[netip.Addr]bool{netip.MustParseAddr("198.51.100.2"): true})("tcp", "198.51.100.2:443", nil); err == nil {
		t.Error("control let a host address through")
	}
	if err := p.control(nil)("tcp", "203.0.113.10:443", nil); err != nil {
		t.Errorf("control refused a public address: %v", err)
	}
}

func TestUnreachableIsFailed(t *testing.T) {
	p := startProxy(t, "unreachable.test,nxdomain.test")
	for _, target := range []string{"unreachable.test:443", "nxdomain.test:443"} {
		if code, _, _ := p.connect(t, target); code != http.StatusBadGateway {
			t.Fatalf("CONNECT %s: %d, want 502", target, code)
		}
	}
	for _, d := range p.logged() {
		if d.Decision != Failed {
			t.Fatalf("decision %+v, want failed", d)
		}
	}
}

func TestPlainHTTP(t *testing.T) {
	p := startProxy(t, "registry.test")
	client := &http.Client{Transport: &http.Transport{
		Proxy: func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy.invalid") },
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", p.socket)
		},
	}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://registry.test/pkg?x=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`host=registry.test uri=/pkg?x=1 proxy-auth=""`)) {
		t.Fatalf("GET through the proxy: %d %s", resp.StatusCode, body)
	}

	// A Host header naming another site is not what is sent: the vetted
	// URL host is.
	c, err := net.Dial("unix", p.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	fmt.Fprint(c, "GET http://registry.test/x HTTP/1.1\r\nHost: evil.example\r\n\r\n")
	resp, err = http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !bytes.Contains(body, []byte("host=registry.test ")) {
		t.Fatalf("upstream saw %s", body)
	}

	for _, raw := range []string{
		"GET /relative HTTP/1.1\r\nHost: registry.test\r\n\r\n",
		"GET https://registry.test/ HTTP/1.1\r\nHost: registry.test\r\n\r\n",
		"GET http://user:pw@registry.test/ HTTP/1.1\r\nHost: registry.test\r\n\r\n",
		"GET http://127.0.0.1/ HTTP/1.1\r\nHost: registry.test\r\n\r\n",
	} {
		c, err := net.Dial("unix", p.socket)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(c, raw)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		_ = c.Close()
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusForbidden {
			t.Errorf("%q: %d, want a refusal", raw, resp.StatusCode)
		}
	}
}

func TestCloseEndsTunnels(t *testing.T) {
	rules, _ := ParseRules("registry.test")
	fn := &fakeNet{names: map[string][][]netip.Addr{"registry.test": {{netip.MustParseAddr("203.0.113.10")}}}, lookups: map[string]int{}}
	hold := listenLocal(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	fn.routes = map[netip.AddrPort]string{netip.MustParseAddrPort("203.0.113.10:443"): hold}
	p := New(Config{Allow: rules, Resolver: fn, dialer: fn.dial})
	sock := filepath.Join(t.TempDir(), "p.sock")
	l, err := ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	fmt.Fprint(c, "CONNECT registry.test:443 HTTP/1.1\r\n\r\n")
	br := bufio.NewReader(c)
	if code := connectStatus(t, br); code != http.StatusOK {
		t.Fatalf("CONNECT: %d", code)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve after Close: %v", err)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) && err == nil {
		t.Fatal("the tunnel outlived Close")
	}
}

func TestIdleTunnelIsClosed(t *testing.T) {
	rules, _ := ParseRules("registry.test")
	fn := &fakeNet{names: map[string][][]netip.Addr{"registry.test": {{netip.MustParseAddr("203.0.113.10")}}}, lookups: map[string]int{}}
	hold := listenLocal(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	fn.routes = map[netip.AddrPort]string{netip.MustParseAddrPort("203.0.113.10:443"): hold}
	p := New(Config{Allow: rules, Resolver: fn, dialer: fn.dial, IdleTimeout: 200 * time.Millisecond})
	sock := filepath.Join(t.TempDir(), "p.sock")
	l, err := ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.Serve(l) }()
	defer func() { _ = p.Close() }()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	fmt.Fprint(c, "CONNECT registry.test:443 HTTP/1.1\r\n\r\n")
	br := bufio.NewReader(c)
	if code := connectStatus(t, br); code != http.StatusOK {
		t.Fatalf("CONNECT: %d", code)
	}
	// Nothing moves: the proxy closes the pair, and the read ends (the
	// deadline only guards the test).
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("read on an idle tunnel: %v, want EOF", err)
	}
}

func TestConnectionsAreBounded(t *testing.T) {
	l := &limitListener{Listener: nil, sem: make(chan struct{}, 1)}
	l.sem <- struct{}{} // the one place is taken
	select {
	case l.sem <- struct{}{}:
		t.Fatal("a second place was free")
	default:
	}
	c := &limitConn{Conn: nopConn{}, release: func() { <-l.sem }}
	_ = c.Close()
	_ = c.Close() // gives its place back once
	select {
	case l.sem <- struct{}{}:
	default:
		t.Fatal("closing did not give the place back")
	}
}

type nopConn struct{ net.Conn }

func (nopConn) Close() error { return nil }

// FuzzTarget feeds arbitrary requests through the proxy's request reading
// and target parsing: nothing panics, and a target it accepts is a valid
// host on a valid port that the allowlist matching takes as given.
func FuzzTarget(f *testing.F) {
	for _, s := range []string{
		"CONNECT registry.npmjs.org:443 HTTP/1.1\r\nHost: registry.npmjs.org:443\r\n\r\n",
		"CONNECT [::1]:443 HTTP/1.1\r\n\r\n",
		"GET http://pypi.org/simple/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n",
		"GET http://[2001:db8::1]:8080/x HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT a:b:c HTTP/1.1\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return
		}
		host, port, err := Target(r)
		if err != nil {
			return
		}
		if host == "" || port < 1 || port > 65535 {
			t.Fatalf("accepted %q:%d", host, port)
		}
		if h, err := normalHost(host); err != nil || h != host {
			t.Fatalf("target host %q is not normal (%q, %v)", host, h, err)
		}
		rule, err := ParseRule(net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("target %q:%d makes no rule: %v", host, port, err)
		}
		if !(Allowlist{rule}).Allows(host, port) {
			t.Fatalf("rule %s does not allow its own target", rule)
		}
	})
}
