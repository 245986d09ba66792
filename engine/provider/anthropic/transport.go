package anthropic

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// Errors of the transport.
var (
	// ErrBadBaseURL marks a base URL that is not an absolute http(s) URL,
	// such as an explicitly empty --base-url.
	ErrBadBaseURL = errors.New("base URL is not an absolute http(s) URL")
	// ErrNoKey marks a provider built without a key.
	ErrNoKey = errors.New(KeyEnv + " is not set")
	// errOffBase marks a request for a URL outside the base URL, which is
	// refused before it leaves: it would carry the key elsewhere.
	errOffBase = errors.New("refusing to send the API key outside the configured base URL")
	// errResponseTooLarge is what a capped body returns past
	// MaxResponseBytes.
	errResponseTooLarge = errors.New("response body exceeds the 64 MiB limit")
)

func parseBase(base string) (*url.URL, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &provider.Error{
			Msg: fmt.Sprintf("invalid base URL %q: want an absolute http(s) URL such as %s", base, DefaultBaseURL),
			Err: ErrBadBaseURL,
		}
	}
	return u, nil
}

// ready reports what stops every request before it is sent: a bad base
// URL or a missing key.
func (p *Provider) ready() error {
	if p.baseErr != nil {
		return p.baseErr
	}
	if p.apiKey == "" {
		return &provider.Error{Msg: ErrNoKey.Error(), Err: ErrNoKey}
	}
	return nil
}

// endpoint is the URL of path (e.g. "/v1/messages") under the base URL, as
// errors name it.
func (p *Provider) endpoint(path string) string {
	return strings.TrimRight(p.baseURL, "/") + path
}

// guard is the SDK middleware every request passes: it lets only requests
// for the base URL's origin out, and caps and cleans every answer's body.
func (p *Provider) guard(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	if p.base == nil || !sameOrigin(req.URL, p.base) {
		return nil, errOffBase
	}
	resp, err := next(req)
	if err != nil || resp == nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = newFiniteBody(&cappedBody{rc: resp.Body, left: MaxResponseBytes})
	return resp, nil
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// refuseRedirect stops the HTTP client at a redirect: Go forwards custom
// headers such as x-api-key to whatever host a redirect names.
func refuseRedirect(req *http.Request, _ []*http.Request) error {
	return fmt.Errorf("%w (a redirect to %s)", errOffBase, req.URL.Redacted())
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

// finiteBody rewrites the non-finite number literals NaN, Infinity and
// -Infinity to null, line by line, wherever they stand outside a string.
// Servers written in Python emit them (E-57) and every JSON decoder the
// SDK uses rejects them. Working by line is exact for JSON bodies and for
// event streams alike: a JSON string cannot hold a raw line break.
type finiteBody struct {
	src  *bufio.Reader
	rc   io.Closer
	out  []byte
	err  error
	line []byte
}

func newFiniteBody(rc io.ReadCloser) *finiteBody {
	return &finiteBody{src: bufio.NewReaderSize(rc, 64<<10), rc: rc}
}

func (f *finiteBody) Read(b []byte) (int, error) {
	for len(f.out) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		f.line = f.line[:0]
		for {
			chunk, err := f.src.ReadSlice('\n')
			f.line = append(f.line, chunk...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			f.err = err
			break
		}
		f.out = finiteJSON(f.line)
	}
	n := copy(b, f.out)
	f.out = f.out[n:]
	return n, nil
}

func (f *finiteBody) Close() error { return f.rc.Close() }

var (
	literalNaN    = []byte("NaN")
	literalInf    = []byte("Infinity")
	literalNegInf = []byte("-Infinity")
	literalNull   = []byte("null")
)

// finiteJSON rewrites NaN, Infinity and -Infinity outside strings to null;
// text without them comes back as it is.
func finiteJSON(data []byte) []byte {
	if !bytes.Contains(data, literalNaN) && !bytes.Contains(data, literalInf) {
		return data
	}
	out := make([]byte, 0, len(data))
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			out = append(out, c)
			continue
		}
		var lit []byte
		switch {
		case c == '"':
			inString = true
		case c == 'N' && bytes.HasPrefix(data[i:], literalNaN):
			lit = literalNaN
		case c == 'I' && bytes.HasPrefix(data[i:], literalInf):
			lit = literalInf
		case c == '-' && bytes.HasPrefix(data[i:], literalNegInf):
			lit = literalNegInf
		}
		if lit != nil {
			out = append(out, literalNull...)
			i += len(lit) - 1
			continue
		}
		out = append(out, c)
	}
	return out
}
