package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// errResponseTooLarge is what a capped body returns past MaxResponseBytes.
var errResponseTooLarge = errors.New("response body exceeds the 64 MiB limit")

// send performs one request. A 2xx answer comes back with its body capped
// at MaxResponseBytes; anything else is a *provider.Error. The whole
// exchange, body included, is bounded by ctx: a server that trickles its
// body fails when ctx ends, not when the body does.
func (p *Provider) send(ctx context.Context, method, target string, body []byte, accept string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, &provider.Error{Msg: fmt.Sprintf("%s %s: %v", method, target, err), Err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if p.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.apiKey)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, requestError(ctx, target, err, false)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer func() { _ = resp.Body.Close() }()
		return nil, statusError(resp, target)
	}
	resp.Body = &cappedBody{rc: resp.Body, left: MaxResponseBytes}
	return resp, nil
}

// fetch performs one request and reads the whole answer.
func (p *Provider) fetch(ctx context.Context, method, target string, body []byte) ([]byte, error) {
	resp, err := p.send(ctx, method, target, body, "")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	return readBody(ctx, resp.Body, target)
}

// readBody reads a (capped) response body whole.
func readBody(ctx context.Context, body io.Reader, target string) ([]byte, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, requestError(ctx, target, err, true)
	}
	return data, nil
}

// requestError turns a failed exchange into a *provider.Error. inBody says
// whether the answer had started: a connection dropped before any byte of
// the answer is worth retrying, a body cut short is not.
func requestError(ctx context.Context, target string, err error, inBody bool) *provider.Error {
	if errors.Is(err, errResponseTooLarge) {
		return &provider.Error{Msg: fmt.Sprintf("response from %s is larger than the %d MiB limit", target, MaxResponseBytes>>20), Err: err}
	}
	// The context's verdict comes first: a deadline that fires mid-read
	// surfaces as assorted read errors.
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return &provider.Error{Msg: fmt.Sprintf("request to %s timed out", target), Timeout: true, Err: cerr}
		}
		return &provider.Error{Msg: fmt.Sprintf("request to %s was cancelled", target), Err: cerr}
	}
	cause := err
	var uerr *url.Error
	if errors.As(err, &uerr) {
		cause = uerr.Err
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		return &provider.Error{Msg: fmt.Sprintf("request to %s timed out: %v", target, cause), Timeout: true, Err: err}
	}
	if inBody {
		return &provider.Error{
			Msg:       fmt.Sprintf("reading the response from %s: %v", target, cause),
			Transient: errors.Is(err, syscall.ECONNRESET),
			Err:       err,
		}
	}
	return &provider.Error{
		Msg:       fmt.Sprintf("cannot reach %s: %v", target, cause),
		Transient: unreachable(err),
		Err:       err,
	}
}

// unreachable reports failures of the connection itself, which a server
// that is starting or restarting produces for a moment.
func unreachable(err error) bool {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		// A name that does not resolve stays unresolved; a DNS server
		// hiccup does not.
		return dnsErr.IsTemporary || dnsErr.IsTimeout
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// cappedBody fails a body that goes on past its limit instead of cutting
// it silently.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (c *cappedBody) Read(b []byte) (int, error) {
	if c.left <= 0 {
		// At the limit: only a further byte makes the body too large.
		var one [1]byte
		n, err := c.rc.Read(one[:])
		if n > 0 {
			return 0, errResponseTooLarge
		}
		return 0, err
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.rc.Read(b)
	c.left -= int64(n)
	return n, err
}

func (c *cappedBody) Close() error { return c.rc.Close() }
