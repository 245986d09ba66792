package provider

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// quickAck wraps a TCP connection so that each read first asks the kernel
// to acknowledge at once (TCP_QUICKACK, which the kernel clears again as
// it sees fit, hence before every read). Other connections are returned
// as they are.
func quickAck(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &quickAckConn{Conn: c, raw: raw}
}

// quickAckConn is a TCP connection that acknowledges what it reads at once.
type quickAckConn struct {
	net.Conn
	raw syscall.RawConn
}

// Read sets TCP_QUICKACK, then reads.
func (c *quickAckConn) Read(p []byte) (int, error) {
	_ = c.raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1) // best effort: a delayed ACK is only slower
	})
	return c.Conn.Read(p)
}
