package anthropic

import (
	"context"
	"time"

	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// messagesPath is the Messages API under the base URL (E-60).
const messagesPath = "/v1/messages"

// Chat sends one Messages request and parses the reply, streamed when
// req.Stream is set. Transient failures (connection refused or reset,
// HTTP 429, 5xx and 529, an overloaded or failing server's error event in
// a stream) are retried under the provider's policy, all within ctx,
// which bounds the whole exchange.
func (p *Provider) Chat(ctx context.Context, req provider.Request) (provider.Response, error) {
	if err := p.ready(); err != nil {
		return provider.Response{}, err
	}
	target := p.endpoint(messagesPath)
	params := newParams(req)
	return provider.Retry(ctx, p.retry, func(ctx context.Context) (provider.Response, error) {
		opts := []option.RequestOption{option.WithRequestTimeout(attemptTimeout(ctx))}
		if req.Stream {
			return p.chatStream(ctx, target, params, req.OnProgress, opts)
		}
		var body []byte
		opts = append(opts, option.WithResponseBodyInto(&body))
		if _, err := p.client.Messages.New(ctx, params, opts...); err != nil {
			return provider.Response{}, classify(ctx, target, err, false)
		}
		return parseMessage(body, target)
	})
}

// attemptTimeout is the SDK's timeout for one try: all ctx leaves. Left to
// itself the SDK would stop a try after ten minutes, and refuse a
// non-streamed request it guesses would take longer.
func attemptTimeout(ctx context.Context) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		return max(time.Until(deadline), time.Millisecond)
	}
	return 24 * time.Hour
}
