package provider

import (
	"context"
	"net"
	"net/http"
	"time"
)

// NewHTTPClient is the HTTP client the providers talk to model servers
// with: the standard transport (proxy settings, keep-alive, HTTP/2) whose
// connections acknowledge every segment they read at once where the
// system allows it (quickAck).
//
// Why: a server that writes a reply's headers and its body in two sends
// with Nagle's algorithm on (Python's http.server, and servers built on
// it) holds the body until the headers are acknowledged, and on a reused
// connection the client delays that acknowledgement by about 40 ms — a
// stall on every request of a run that a fresh connection per request
// (the original's way) never paid.
func NewHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return quickAck(c), nil
	}
	return &http.Client{Transport: tr}
}
