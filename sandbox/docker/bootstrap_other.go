//go:build !linux

package docker

import (
	"context"
	"io"
)

// BootstrapBase makes the worker image's Debian base with debootstrap,
// which exists on Linux only: elsewhere it returns ErrBootstrapUnsupported.
func (c *Client) BootstrapBase(context.Context, string, io.Writer) (string, error) {
	return "", ErrBootstrapUnsupported
}
