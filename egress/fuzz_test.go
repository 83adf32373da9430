package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
)

// FuzzParseRule: any string either parses to a rule whose canonical form
// parses back to the same rule, or is an ErrInvalidRule; never a panic.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		"api.example.com", "*.example.com", "api.example.com:443", "*.example.com:8443",
		"203.0.113.7", "203.0.113.7:80", "[2001:db8::7]:8080", "2001:db8::7", "10.0.0.0/8",
		"fc00::/7", "::ffff:10.0.0.0/104", "::ffff:127.0.0.1", "EXAMPLE.COM.", "a_b.example",
		"", "*", "a.com:0", "fe80::1%eth0", "127.1", "1.2.3.4/33", "[::1]", "a.com:65535",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseRule(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidRule) {
				t.Fatalf("parseRule(%q): %v is not an ErrInvalidRule", s, err)
			}
			return
		}
		c := r.String()
		r2, err := parseRule(c)
		if err != nil {
			t.Fatalf("parseRule(%q) = %q, which does not parse: %v", s, c, err)
		}
		r2.text = r.text
		if r2 != r {
			t.Fatalf("parseRule(%q) = %+v; its form %q parses to %+v", s, r, c, r2)
		}
		if r.isAddr() && (r.name != "" || r.suffix != "") {
			t.Fatalf("parseRule(%q): both an address and a name", s)
		}
	})
}

// FuzzCheck: any address given to Check and DialContext is either
// refused with a *DeniedError or allowed for a reason the rules give;
// never a panic. The resolver answers nothing, so no query leaves the
// process.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"127.0.0.1:80", "[::1]:443", "[::ffff:10.0.0.1]:80", "example.com:443",
		"example.com", "[fe80::1%25eth0]:80", ":80", "1.2.3.4:99999", "a:b:c", "[64:ff9b::7f00:1]:1"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	noDNS := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no DNS in this test")
	}}
	open, _ := New(&Options{Allow: []string{"203.0.113.0/24", "api.example.com:443"}, Resolver: noDNS})
	restricted, _ := New(&Options{Allow: []string{"203.0.113.0/24", "api.example.com:443"}, Resolver: noDNS, Restricted: true})
	f.Fuzz(func(t *testing.T, addr string, restrict bool) {
		p := open
		if restrict {
			p = restricted
		}
		err := p.Check(context.Background(), addr)
		var d *DeniedError
		if err != nil && !errors.As(err, &d) {
			var dnsErr *net.DNSError
			if !errors.As(err, &dnsErr) {
				t.Fatalf("Check(%q): %v is neither a refusal nor a DNS error", addr, err)
			}
			return
		}
		if err == nil {
			ap, perr := netip.ParseAddrPort(addr)
			if perr != nil {
				t.Fatalf("Check(%q) allowed an address that is not an IP:port", addr)
			}
			if classify(ap.Addr()) != "" && !netip.MustParsePrefix("203.0.113.0/24").Contains(ap.Addr().Unmap()) {
				t.Fatalf("Check(%q) allowed a non-public address", addr)
			}
		}
	})
}
