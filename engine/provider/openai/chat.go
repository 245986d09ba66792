package openai

import (
	"context"
	"errors"
	"net/http"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// Chat sends one chat-completions request and parses the reply. Transient
// failures are retried under the provider's policy, all within ctx, which
// bounds the whole exchange. The reply is streamed when req.Stream is set
// and the server has not refused streaming before; a refusal switches the
// provider to plain requests for good and the request is sent again at
// once, without counting as a retry.
func (p *Provider) Chat(ctx context.Context, req provider.Request) (provider.Response, error) {
	target, err := p.endpoint("/chat/completions")
	if err != nil {
		return provider.Response{}, err
	}
	return provider.Retry(ctx, p.retry, func(ctx context.Context) (provider.Response, error) {
		if req.Stream && !p.noStream.Load() {
			resp, err := p.chatStream(ctx, target, req)
			if !errors.Is(err, errStreamRefused) {
				return resp, err
			}
			p.noStream.Store(true)
		}
		return p.chatPlain(ctx, target, req)
	})
}

// chatPlain sends a non-streamed request.
func (p *Provider) chatPlain(ctx context.Context, target string, req provider.Request) (provider.Response, error) {
	body, err := encodeRequest(req, false)
	if err != nil {
		return provider.Response{}, err
	}
	data, err := p.fetch(ctx, http.MethodPost, target, body)
	if err != nil {
		return provider.Response{}, err
	}
	return p.parseCompletion(data, target)
}
