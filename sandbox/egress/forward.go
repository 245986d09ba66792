package egress

import (
	"errors"
	"io"
	"net"
	"sync"
)

// Where the proxy is inside a sandbox.
const (
	// ListenAddr is the forwarder's address on the sandbox's own
	// loopback: what the proxy variables name. The sandbox has a network
	// namespace of its own, so the port is always free when the tool
	// server starts.
	ListenAddr = "127.0.0.1:3128"
	// SocketName is the proxy's socket in the directory bound into the
	// sandbox.
	SocketName = "proxy.sock"
)

// Env are the variables that point a sandbox's clients at the forwarder
// on listen: HTTP_PROXY, HTTPS_PROXY and ALL_PROXY in both cases (tools
// read one or the other), and NO_PROXY naming only the sandbox's own
// loopback, which is not the host's and needs no proxy.
func Env(listen string) []string {
	u := "http://" + listen
	var env []string
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
		env = append(env, name+"="+u)
	}
	for _, name := range []string{"http_proxy", "https_proxy", "all_proxy"} {
		env = append(env, name+"="+u)
	}
	return append(env, "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1")
}

// MaxForwarded bounds the connections a forwarder carries at once.
const MaxForwarded = 256

// Forward accepts connections on l and carries each to a new connection
// to the proxy's unix socket, both ways, until either side ends; at most
// MaxForwarded at once (a further one waits). It returns when l is
// closed. A connection the socket refuses is closed at once: the client
// sees the proxy gone, as it is.
func Forward(l net.Listener, socket string) error {
	sem := make(chan struct{}, MaxForwarded)
	for {
		sem <- struct{}{}
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go func() {
			defer func() { <-sem }()
			carry(c, socket)
		}()
	}
}

// carry joins c to a new connection to socket until both directions end.
func carry(c net.Conn, socket string) {
	defer func() { _ = c.Close() }()
	up, err := net.Dial("unix", socket)
	if err != nil {
		return
	}
	defer func() { _ = up.Close() }()
	var wg sync.WaitGroup
	half := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	wg.Add(2)
	go half(up, c)
	go half(c, up)
	wg.Wait()
}
