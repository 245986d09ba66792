package egress

import (
	"errors"
	"slices"
	"testing"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in   string
		want Rule
		text string
	}{
		{"registry.npmjs.org", Rule{Host: "registry.npmjs.org"}, "registry.npmjs.org"},
		{"Registry.NPMJS.org.", Rule{Host: "registry.npmjs.org"}, "registry.npmjs.org"},
		{" pypi.org:8443 ", Rule{Host: "pypi.org", Port: 8443}, "pypi.org:8443"},
		{"*.crates.io", Rule{Host: "crates.io", Wildcard: true}, "*.crates.io"},
		{"*.crates.io:443", Rule{Host: "crates.io", Wildcard: true, Port: 443}, "*.crates.io:443"},
		{"*", Rule{Wildcard: true}, "*"},
		{"*:8080", Rule{Wildcard: true, Port: 8080}, "*:8080"},
		{"203.0.113.7", Rule{Host: "203.0.113.7"}, "203.0.113.7"},
		{"203.0.113.7:81", Rule{Host: "203.0.113.7", Port: 81}, "203.0.113.7:81"},
		{"[2001:DB8::1]:443", Rule{Host: "2001:db8::1", Port: 443}, "[2001:db8::1]:443"},
		{"[2001:db8::1]", Rule{Host: "2001:db8::1"}, "[2001:db8::1]"},
		{"my_host.internal", Rule{Host: "my_host.internal"}, "my_host.internal"},
	}
	for _, tt := range tests {
		got, err := ParseRule(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			continue
		}
		if got.String() != tt.text {
			t.Errorf("ParseRule(%q).String() = %q, want %q", tt.in, got.String(), tt.text)
		}
	}
	for _, bad := range []string{
		"", ":443", "host:", "host:0", "host:65536", "host:+1", "host:08", "2001:db8::1", "[2001:db8::1",
		"[10.0.0.1]:80", "[fe80::1%eth0]", "a..b", "-a.b", "a-.b", "a b", "a/b", "*.", "*.1.2.3.4", "a.*.b",
		"http://host", "host:80:81", "[::1]x",
	} {
		if r, err := ParseRule(bad); !errors.Is(err, ErrBadRule) {
			t.Errorf("ParseRule(%q) = %+v, %v; want ErrBadRule", bad, r, err)
		}
	}
}

func TestAllows(t *testing.T) {
	l, err := ParseRules("registry.npmjs.org, *.crates.io", "pypi.org:8443", "203.0.113.7,[2001:db8::1]:443")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		port int
		want bool
	}{
		{"registry.npmjs.org", 443, true},
		{"registry.npmjs.org", 80, true},
		{"REGISTRY.npmjs.org.", 443, true},
		{"registry.npmjs.org", 22, false},
		{"registry.npmjs.org", 8443, false},
		{"evil-registry.npmjs.org", 443, false},
		{"registry.npmjs.org.evil.com", 443, false},
		{"npmjs.org", 443, false},
		{"index.crates.io", 443, true},
		{"a.b.crates.io", 80, true},
		{"crates.io", 443, false}, // the wildcard stands under the domain only
		{"xcrates.io", 443, false},
		{"pypi.org", 8443, true},
		{"pypi.org", 443, false},
		{"203.0.113.7", 443, true},
		{"203.0.113.7", 8080, false},
		{"[2001:db8::1]", 443, true},
		{"2001:db8:0::1", 443, true},
		{"2001:db8::1", 80, false},
		{"", 443, false},
		{"bad host", 443, false},
	}
	for _, tt := range tests {
		if got := l.Allows(tt.host, tt.port); got != tt.want {
			t.Errorf("Allows(%q, %d) = %v, want %v", tt.host, tt.port, got, tt.want)
		}
	}
	any, _ := ParseRules("*")
	if !any.Allows("anything.example", 443) || any.Allows("anything.example", 22) {
		t.Error("* must allow any host on the default ports only")
	}
	if (Allowlist{}).Allows("registry.npmjs.org", 443) {
		t.Error("an empty list allowed a host")
	}
}

func TestParseRulesDeduplicates(t *testing.T) {
	l, err := ParseRules("a.example,b.example", "A.example.", ",,", "b.example:443")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.Strings(), []string{"a.example", "b.example", "b.example:443"}; !slices.Equal(got, want) {
		t.Fatalf("rules %q, want %q", got, want)
	}
	if _, err := ParseRules("good.example,bad host"); err == nil {
		t.Fatal("a bad item in a list passed")
	}
}

// FuzzParseRule checks that a parsed rule prints as text that parses back
// to the same rule, and that it allows what it names.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"registry.npmjs.org", "*.crates.io:443", "[2001:db8::1]:8443", "*", "1.2.3.4:80", "a_b.c."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		back, err := ParseRule(r.String())
		if err != nil || back != r {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, r, r.String(), back, err)
		}
		if r.Wildcard {
			return
		}
		port := r.Port
		if port == 0 {
			port = 443
		}
		if !(Allowlist{r}).Allows(r.Host, port) {
			t.Fatalf("rule %q does not allow its own host %q:%d", r, r.Host, port)
		}
	})
}
