//go:build !linux

package provider

import "net"

// quickAck returns c: TCP_QUICKACK is Linux's; elsewhere the delayed
// acknowledgement stays as the system keeps it.
func quickAck(c net.Conn) net.Conn { return c }
