package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestForbidden(t *testing.T) {
	tests := []struct {
		addr string
		want string // a part of the reason; "" for a public address
	}{
		{"10.0.0.1", "private"},
		{"10.255.255.255", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.254", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "CGNAT"},
		{"100.127.255.255", "CGNAT"},
		{"127.0.0.1", "loopback"},
		{"127.8.9.10", "loopback"},
		{"::1", "loopback"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fd00::1", "unique local"},
		{"fc00::1", "unique local"},
		{"169.254.169.254", "link-local"},
		{"::ffff:127.0.0.1", "IPv4-mapped loopback"},
		{"::ffff:10.1.2.3", "IPv4-mapped private"},
		{"::ffff:169.254.169.254", "IPv4-mapped link-local"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"::", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"64:ff9b::7f00:1", "NAT64 loopback"},
		{"64:ff9b::a9fe:a9fe", "NAT64 link-local"},
		{"64:ff9b:1::1", "local-use NAT64"},
		{"2002:7f00:1::1", "6to4 loopback"},
		{"2002:c0a8:101::1", "6to4 private"},
		{"::ffff:0:7f00:1", "IPv4-translated loopback"},
		{"2001::1", "Teredo"},
		{"fec0::1", "site-local"},
		// Public addresses.
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"151.101.1.1", ""},
		{"172.32.0.1", ""},
		{"100.128.0.1", ""},
		{"169.253.1.1", ""},
		{"192.0.2.10", ""},
		{"2606:4700::1111", ""},
		{"2a00:1450:4001::200e", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"2002:808:808::1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			got := Forbidden(netip.MustParseAddr(tt.addr))
			if tt.want == "" {
				if got != "" {
					t.Fatalf("Forbidden(%s) = %q, want a public address", tt.addr, got)
				}
				return
			}
			if got == "" || !strings.Contains(got, tt.want) {
				t.Fatalf("Forbidden(%s) = %q, want a reason with %q", tt.addr, got, tt.want)
			}
		})
	}
	if Forbidden(netip.Addr{}) == "" {
		t.Fatal("the zero Addr passed")
	}
}
