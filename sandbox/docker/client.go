package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/docker/docker/client"
)

// Client is a connection to one Docker daemon through the Engine API. A
// process needs only one; it is safe for concurrent use.
type Client struct {
	api      *client.Client
	endpoint Endpoint
}

// Connect discovers the daemon from the process environment (see
// DiscoverEndpoint) and returns a client for it. It does not contact the
// daemon; ServerVersion does.
func Connect() (*Client, error) {
	ep, err := DiscoverEndpoint(os.Getenv)
	if err != nil {
		return nil, err
	}
	return NewClient(ep)
}

// ConnectTo is Connect for the daemon at host, a DOCKER_HOST value (TLS
// as DOCKER_HOST's: DOCKER_CERT_PATH, DOCKER_TLS_VERIFY); "" is the
// environment's daemon. A bench spreads its cases over several daemons.
func ConnectTo(host string) (*Client, error) {
	if host == "" {
		return Connect()
	}
	ep, err := checkHost(Endpoint{Host: host, Source: "--docker-host", tlsFromEnv: true})
	if err != nil {
		return nil, err
	}
	return NewClient(ep)
}

// NewClient returns a client for the daemon at ep. The API version is
// negotiated with the daemon on the first call, so an older engine is
// spoken to in its own version.
func NewClient(ep Endpoint) (*Client, error) {
	opts := []client.Opt{client.WithAPIVersionNegotiation()}
	switch {
	case ep.tlsFromEnv:
		opts = append(opts, client.WithTLSClientConfigFromEnv())
	case ep.TLSDir != "":
		opts = append(opts, client.WithTLSClientConfig(
			existing(filepath.Join(ep.TLSDir, "ca.pem")),
			existing(filepath.Join(ep.TLSDir, "cert.pem")),
			existing(filepath.Join(ep.TLSDir, "key.pem"))))
	}
	// The host goes last: it configures the transport the TLS options set
	// up, as the SDK's own FromEnv orders them.
	opts = append(opts, client.WithHost(ep.Host))
	api, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("make a docker client for %s: %w", ep, err)
	}
	return &Client{api: api, endpoint: ep}, nil
}

// existing returns path if a file is there, else "" (which the TLS
// configuration reads as "not given").
func existing(path string) string {
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
}

// Endpoint reports the daemon this client talks to.
func (c *Client) Endpoint() Endpoint { return c.endpoint }

// Close releases the client's idle connections.
func (c *Client) Close() error {
	if err := c.api.Close(); err != nil {
		return fmt.Errorf("close docker client for %s: %w", c.endpoint, err)
	}
	return nil
}

// ServerVersion asks the daemon for its version: the preflight check that
// a daemon answers at all. An unreachable daemon is ErrDaemonUnreachable;
// one that does not answer within QueryTimeout is ErrTimedOut.
func (c *Client) ServerVersion(ctx context.Context) (string, error) {
	var version string
	err := query(ctx, "query docker daemon at "+c.endpoint.String(), func(ctx context.Context) error {
		v, err := c.api.ServerVersion(ctx)
		version = v.Version
		return err
	})
	return version, err
}
