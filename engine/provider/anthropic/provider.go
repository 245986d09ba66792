// Package anthropic is the provider for Anthropic's Messages API
// (--provider anthropic, E-60).
//
// It goes through the official Go SDK, github.com/anthropics/anthropic-sdk-go,
// at its v1 line: that speaks API version 2023-06-01 with the x-api-key
// header, as the contract says, and gives us the request types, the
// server-sent-event decoder and the typed stream events, so none of that
// wire format is written here. The SDK is held to what the engine needs:
// it reads nothing from the environment (the key comes in Config), it never
// retries (provider.Retry does, with the OpenAI path's policy), and a
// middleware caps every body, reads NaN and Infinity as null and refuses
// any URL outside the configured base. Replies are judged by E-60's rules
// from the raw fields the SDK keeps, not from its typed values, so a
// malformed reply is reported the way the OpenAI path reports one.
package anthropic

import (
	"context"
	"net/http"
	"net/url"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// Name is the provider's name in the contract.
const Name = "anthropic"

// Protocol constants.
const (
	// DefaultBaseURL is Anthropic's API.
	DefaultBaseURL = "https://api.anthropic.com"
	// KeyEnv names the variable the key is read from; only dirtywork's own
	// process reads it, and it is sent only to the configured base URL.
	KeyEnv = "ANTHROPIC_API_KEY"
	// DefaultMaxTokens caps a reply when the request names no limit.
	DefaultMaxTokens = 4096
	// PreflightTimeout bounds ListModels.
	PreflightTimeout = 10 * time.Second
	// MaxResponseBytes caps any response body.
	MaxResponseBytes = 64 << 20
)

// Config configures a Provider.
type Config struct {
	// BaseURL is the API root, e.g. https://api.anthropic.com. It is kept
	// as given, even empty (requests then fail saying so).
	BaseURL string
	// APIKey is sent as x-api-key, to BaseURL only. Empty means the
	// operator has not set ANTHROPIC_API_KEY: every request fails saying
	// so, before anything is sent.
	APIKey string
	// HTTPClient sends the requests (nil means a client without a timeout
	// of its own: every call is bounded by its context). Its redirects are
	// never followed: the key must not go anywhere else.
	HTTPClient *http.Client
	// Retry is the policy for transient failures (zero value: 3 tries).
	Retry provider.RetryPolicy
}

// DefaultConfig returns a Config for Anthropic's API with key.
func DefaultConfig(key string) Config {
	return Config{BaseURL: DefaultBaseURL, APIKey: key}
}

// Provider talks to one Messages API endpoint. It is safe for concurrent
// use.
type Provider struct {
	baseURL string
	apiKey  string
	retry   provider.RetryPolicy
	// base is the parsed base URL, nil when it is not an absolute http(s)
	// URL (baseErr says so).
	base    *url.URL
	baseErr error
	client  sdk.Client
}

var _ provider.Provider = (*Provider)(nil)

// New returns a provider for cfg.
func New(cfg Config) *Provider {
	p := &Provider{baseURL: cfg.BaseURL, apiKey: cfg.APIKey, retry: cfg.Retry}
	p.base, p.baseErr = parseBase(cfg.BaseURL)
	hc := provider.NewHTTPClient()
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	}
	hc.CheckRedirect = refuseRedirect
	opts := []option.RequestOption{
		// Nothing from the environment: no ANTHROPIC_BASE_URL, auth token
		// or profile may change where the key goes.
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
		option.WithMiddleware(p.guard),
	}
	if p.base != nil {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	p.client = sdk.NewClient(opts...)
	return p
}

// Name returns "anthropic".
func (p *Provider) Name() string { return Name }

// BaseURL returns the base URL as configured.
func (p *Provider) BaseURL() string { return p.baseURL }

// ProbeContextWindow never has an answer: the API does not report one
// (E-60), and the table's claude-* entry decides.
func (p *Provider) ProbeContextWindow(_ context.Context, _ string) (int, bool) { return 0, false }
