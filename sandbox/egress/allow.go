package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// DefaultPorts are the ports a rule without one allows: HTTPS and HTTP.
var DefaultPorts = []int{443, 80}

// Rule is one allowlist entry: a host, every host under a domain
// (Wildcard: "*.example.com" allows a.example.com and a.b.example.com, not
// example.com itself), or any host at all ("*"), on one port or, when Port
// is 0, on DefaultPorts.
type Rule struct {
	// Host is lower case without a trailing dot: a name, an IP address
	// (without brackets), the domain a wildcard stands under, or "" for
	// "*".
	Host     string
	Wildcard bool
	Port     int
}

// ErrBadRule is a host or port no rule can be made of.
var ErrBadRule = errors.New("not a host[:port]")

// ParseRule reads HOST, HOST:PORT, *.DOMAIN[:PORT], *[:PORT], an IPv4
// address or a bracketed IPv6 address ([2001:db8::1]:443).
func ParseRule(s string) (Rule, error) {
	in := s
	s = strings.TrimSpace(s)
	hostPart, port := s, 0
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return Rule{}, fmt.Errorf("%w: %q has no closing ]", ErrBadRule, in)
		}
		hostPart = s[1:end]
		rest := s[end+1:]
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return Rule{}, fmt.Errorf("%w: %q", ErrBadRule, in)
			}
			n, err := parsePort(p)
			if err != nil {
				return Rule{}, fmt.Errorf("%w: %q: %w", ErrBadRule, in, err)
			}
			port = n
		}
		a, err := netip.ParseAddr(hostPart)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return Rule{}, fmt.Errorf("%w: %q is not an IPv6 address", ErrBadRule, in)
		}
		return Rule{Host: a.String(), Port: port}, nil
	case strings.Count(s, ":") == 1:
		h, p, _ := strings.Cut(s, ":")
		n, err := parsePort(p)
		if err != nil {
			return Rule{}, fmt.Errorf("%w: %q: %w", ErrBadRule, in, err)
		}
		hostPart, port = h, n
	case strings.Count(s, ":") > 1:
		return Rule{}, fmt.Errorf("%w: %q (an IPv6 address goes in brackets: [2001:db8::1]:443)", ErrBadRule, in)
	}
	if hostPart == "*" {
		return Rule{Wildcard: true, Port: port}, nil
	}
	wild := false
	if rest, ok := strings.CutPrefix(hostPart, "*."); ok {
		wild, hostPart = true, rest
	}
	host, err := normalHost(hostPart)
	if err != nil {
		return Rule{}, fmt.Errorf("%w: %q: %w", ErrBadRule, in, err)
	}
	if wild {
		if _, err := netip.ParseAddr(host); err == nil {
			return Rule{}, fmt.Errorf("%w: %q: a wildcard stands before a domain name, not an address", ErrBadRule, in)
		}
	}
	return Rule{Host: host, Wildcard: wild, Port: port}, nil
}

// parsePort reads a port from 1 to 65535.
func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || s != strconv.Itoa(n) {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return n, nil
}

// normalHost is a host name lower case without a trailing dot, or an IP
// address in its canonical form; anything else is an error.
func normalHost(h string) (string, error) {
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", errors.New("an address with a zone")
		}
		return a.Unmap().String(), nil
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "" || len(h) > 253 {
		return "", errors.New("an empty or overlong host name")
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return "", errors.New("an empty or overlong label")
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return "", fmt.Errorf("label %q starts or ends with '-'", label)
		}
		for _, c := range label {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
				return "", fmt.Errorf("%q is not allowed in a host name", c)
			}
		}
	}
	return h, nil
}

// String is the rule as ParseRule reads it.
func (r Rule) String() string {
	h := r.Host
	switch {
	case r.Wildcard && h == "":
		h = "*"
	case r.Wildcard:
		h = "*." + h
	case strings.Contains(h, ":"):
		h = "[" + h + "]"
	}
	if r.Port != 0 {
		return h + ":" + strconv.Itoa(r.Port)
	}
	return h
}

// matches reports whether the rule allows host (as normalHost gives it)
// on port.
func (r Rule) matches(host string, port int) bool {
	if r.Port != 0 {
		if port != r.Port {
			return false
		}
	} else if !slices.Contains(DefaultPorts, port) {
		return false
	}
	switch {
	case r.Wildcard && r.Host == "":
		return true
	case r.Wildcard:
		return strings.HasSuffix(host, "."+r.Host)
	default:
		return host == r.Host
	}
}

// Allowlist is the rules a proxy lets through.
type Allowlist []Rule

// ParseRules reads rules, each item possibly a comma-separated list, and
// returns them without duplicates, in order.
func ParseRules(items ...string) (Allowlist, error) {
	var l Allowlist
	for _, item := range items {
		for part := range strings.SplitSeq(item, ",") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			r, err := ParseRule(part)
			if err != nil {
				return nil, err
			}
			l = l.With(r)
		}
	}
	return l, nil
}

// With is l with r added at the end, unless l has it already.
func (l Allowlist) With(rs ...Rule) Allowlist {
	for _, r := range rs {
		if !slices.Contains(l, r) {
			l = append(l, r)
		}
	}
	return l
}

// Allows reports whether host on port is on the list. host is a name or
// an IP address as a request gives it (any case, a trailing dot, IPv6 in
// brackets or not).
func (l Allowlist) Allows(host string, port int) bool {
	h, err := normalHost(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil {
		return false
	}
	for _, r := range l {
		if r.matches(h, port) {
			return true
		}
	}
	return false
}

// Strings are the rules as text, for run_start and the proxy's arguments.
func (l Allowlist) Strings() []string {
	out := make([]string, len(l))
	for i, r := range l {
		out[i] = r.String()
	}
	return out
}
