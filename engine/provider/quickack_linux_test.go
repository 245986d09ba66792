package provider

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// nagleServer answers every request on a kept-alive connection as
// Python's http.server does: the headers in one send, the body in a
// second, with Nagle's algorithm on. It returns the URL to post to.
func nagleServer(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	body := []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*net.TCPConn).SetNoDelay(false)
			go func() {
				defer func() { _ = c.Close() }()
				r := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(r)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
					if _, err := c.Write([]byte(head)); err != nil {
						return
					}
					if _, err := c.Write(body); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/v1/chat/completions"
}

// post sends one request and reads the whole reply.
func post(tb testing.TB, c *http.Client, url string) {
	resp, err := c.Post(url, "application/json", bytes.NewReader([]byte(`{"model":"m"}`)))
	if err != nil {
		tb.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(data, []byte(`"ok"`)) {
		tb.Fatalf("reply %d %q: %v", resp.StatusCode, data, err)
	}
}

// A server that sends headers and body apart with Nagle on is not held
// up by a delayed acknowledgement on the kept-alive connection: 100
// requests take about 4.4 s without quick acknowledgements (44 ms each)
// and a few tens of milliseconds with them. The bound is a liveness
// bound, well above the latter on a loaded machine.
func TestNagleServerIsNotStalledByDelayedAcks(t *testing.T) {
	url := nagleServer(t)
	c := NewHTTPClient()
	defer c.CloseIdleConnections()
	post(t, c, url) // the connection is made; later requests reuse it
	start := time.Now()
	for range 100 {
		post(t, c, url)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("100 requests took %s: the reused connection waits on delayed acknowledgements", took)
	}
}

// BenchmarkNagleServerRequest is one request to such a server on a reused
// connection, with the providers' client and with the standard one.
func BenchmarkNagleServerRequest(b *testing.B) {
	url := nagleServer(b)
	for _, tc := range []struct {
		name string
		c    *http.Client
	}{{"quickack", NewHTTPClient()}, {"standard", &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}} {
		b.Run(tc.name, func(b *testing.B) {
			post(b, tc.c, url)
			for b.Loop() {
				post(b, tc.c, url)
			}
			tc.c.CloseIdleConnections()
		})
	}
}
