// Package openai is the provider for OpenAI-compatible chat-completions
// servers: LM Studio, Ollama, vLLM, llama.cpp and hosted APIs.
//
// It speaks the wire protocol itself instead of through a client library.
// The contract fixes the request body exactly (content "" is sent, a
// temperature of 0 is sent) and the reply parse rules per tool-call entry
// (a numeric id makes one entry unaddressable, bad usage counts as 0,
// NaN and Infinity literals are accepted). A typed client drops the first
// two and fails the whole reply on the rest, so requests are encoded from
// small wire structs and replies are parsed from the raw bytes.
package openai

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// Name is the provider's name in the contract.
const Name = "openai"

// Protocol constants.
const (
	// DefaultBaseURL is LM Studio's local server.
	DefaultBaseURL = "http://localhost:1234/v1"
	// DefaultMaxTokens caps a reply when the request names no limit.
	DefaultMaxTokens = 4096
	// PreflightTimeout bounds ListModels.
	PreflightTimeout = 10 * time.Second
	// ProbeTimeout bounds each context-window probe request.
	ProbeTimeout = 2 * time.Second
	// MaxResponseBytes caps any response body.
	MaxResponseBytes = 64 << 20
)

// Config configures a Provider.
type Config struct {
	// BaseURL is the API root, e.g. http://localhost:1234/v1. It is kept
	// as given, even empty (requests then fail saying so); DefaultConfig
	// fills in DefaultBaseURL.
	BaseURL string
	// APIKey, when set, is sent as a bearer token. It never appears in
	// errors or anything the provider returns.
	APIKey string
	// HTTPClient sends the requests (nil means a client without a timeout
	// of its own: every call is bounded by its context).
	HTTPClient *http.Client
	// Retry is the policy for transient failures (zero value: 3 tries).
	Retry provider.RetryPolicy
}

// DefaultConfig returns a Config for LM Studio on this machine.
func DefaultConfig() Config {
	return Config{BaseURL: DefaultBaseURL}
}

// Provider talks to one OpenAI-compatible server. It is safe for
// concurrent use.
type Provider struct {
	baseURL string
	apiKey  string
	client  *http.Client
	retry   provider.RetryPolicy

	// noStream is set once the server has refused a streamed request; the
	// provider asks without streaming from then on.
	noStream atomic.Bool
	// callSeq numbers the tool-call ids made up for servers that send none.
	callSeq atomic.Uint64

	probeMu sync.Mutex
	probed  map[string]probeResult
}

var (
	_ provider.Provider           = (*Provider)(nil)
	_ provider.ServedWindowProber = (*Provider)(nil)
)

// New returns a provider for cfg.
func New(cfg Config) *Provider {
	client := cfg.HTTPClient
	if client == nil {
		client = provider.NewHTTPClient()
	}
	return &Provider{
		baseURL: cfg.BaseURL,
		apiKey:  cfg.APIKey,
		client:  client,
		retry:   cfg.Retry,
		probed:  map[string]probeResult{},
	}
}

// Name returns "openai".
func (p *Provider) Name() string { return Name }

// BaseURL returns the base URL as configured.
func (p *Provider) BaseURL() string { return p.baseURL }

// StreamingDisabled reports whether the server refused streaming and the
// provider now asks without it.
func (p *Provider) StreamingDisabled() bool { return p.noStream.Load() }
