package openai

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// ErrBadBaseURL marks a base URL that is not an absolute http(s) URL, such
// as an explicitly empty --base-url.
var ErrBadBaseURL = errors.New("base URL is not an absolute http(s) URL")

// endpoint returns the URL of path (e.g. "/chat/completions") under the
// base URL.
func (p *Provider) endpoint(path string) (string, error) {
	if _, err := p.parsedBase(); err != nil {
		return "", err
	}
	return strings.TrimRight(p.baseURL, "/") + path, nil
}

// origin returns scheme://host[:port] of the base URL: LM Studio, Ollama
// and llama.cpp serve their native APIs there, outside the /v1 path.
func (p *Provider) origin() (string, error) {
	u, err := p.parsedBase()
	if err != nil {
		return "", err
	}
	return u.Scheme + "://" + u.Host, nil
}

func (p *Provider) parsedBase() (*url.URL, error) {
	u, err := url.Parse(p.baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &provider.Error{
			Msg: fmt.Sprintf("invalid base URL %q: want an absolute http(s) URL such as %s", p.baseURL, DefaultBaseURL),
			Err: ErrBadBaseURL,
		}
	}
	return u, nil
}
