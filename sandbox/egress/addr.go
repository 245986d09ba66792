package egress

import (
	"net/netip"
)

// ranges are the address blocks no connection may go to, with the reason
// a refusal gives. What they have in common: none of them is a public
// internet address, and each can lead to something of the host's or of a
// local network (a database on loopback, cloud metadata on link-local, a
// router on a private network, a NAT64 gateway's view of them).
var ranges = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified (this network)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT, RFC 6598)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (RFC 1918)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (RFC 1918)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (and broadcast)"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible (deprecated)"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (RFC 4193)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (deprecated)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// Prefixes whose addresses carry an IPv4 address that a translator on the
// way turns them into; the embedded address is what counts.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	// translated is SIIT's IPv4-translated form ::ffff:0:a.b.c.d.
	translated = netip.MustParsePrefix("::ffff:0:0:0/96")
)

// Forbidden returns why no connection may go to a, or "" when a is a
// public address. The IPv4-mapped (::ffff:a.b.c.d), IPv4-translated,
// NAT64 and 6to4 forms of an IPv4 address are judged by that address; a
// zone (fe80::1%eth0) changes nothing.
func Forbidden(a netip.Addr) string {
	if !a.IsValid() {
		return "not an address"
	}
	a = a.WithZone("")
	if a.Is4In6() {
		if r := Forbidden(a.Unmap()); r != "" {
			return "IPv4-mapped " + r
		}
		return ""
	}
	if a.Is6() {
		b := a.As16()
		var v4 netip.Addr
		var form string
		switch {
		case translated.Contains(a):
			v4, form = netip.AddrFrom4([4]byte(b[12:16])), "IPv4-translated "
		case nat64.Contains(a):
			v4, form = netip.AddrFrom4([4]byte(b[12:16])), "NAT64 "
		case sixToFour.Contains(a):
			v4, form = netip.AddrFrom4([4]byte(b[2:6])), "6to4 "
		}
		if v4.IsValid() {
			if r := Forbidden(v4); r != "" {
				return form + r
			}
			return ""
		}
	}
	for _, r := range ranges {
		if r.prefix.Contains(a) {
			return r.reason
		}
	}
	return ""
}
