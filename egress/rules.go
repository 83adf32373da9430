package egress

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// rule is one parsed entry of Options.Allow. Exactly one of name, suffix
// and prefix is set; port 0 means any port.
type rule struct {
	text   string       // as written, for error messages
	name   string       // exact host name, lower case, no trailing dot
	suffix string       // "*.example.com" → ".example.com"
	prefix netip.Prefix // an IP (a /32 or /128) or a CIDR
	port   uint16
}

func (r *rule) isAddr() bool { return r.prefix.IsValid() }

// matchName reports whether the rule allows dialling name on port by name.
func (r *rule) matchName(name string, port uint16) bool {
	if r.port != 0 && r.port != port {
		return false
	}
	switch {
	case r.name != "":
		return name == r.name
	case r.suffix != "":
		return len(name) > len(r.suffix) && strings.HasSuffix(name, r.suffix)
	}
	return false
}

// matchAddr reports whether the rule allows the address ip:port.
func (r *rule) matchAddr(ip netip.Addr, port uint16) bool {
	return r.isAddr() && (r.port == 0 || r.port == port) && r.prefix.Contains(ip)
}

// maxRuleLen bounds a rule: a host name is at most 253 bytes.
const maxRuleLen = 300

// parseRule parses one allow rule:
//
//	api.example.com         an exact host name, any port
//	*.example.com           any name below example.com (not example.com itself)
//	api.example.com:443     a name and a port (also *.example.com:443)
//	203.0.113.7, 2001:db8::7     an IP address, any port
//	203.0.113.7:8080, [2001:db8::7]:8080   an address and a port
//	10.0.0.0/8, fc00::/7    a CIDR range, any port
//
// Names are compared in lower case without a trailing dot; IPv4-mapped
// IPv6 addresses are read as the IPv4 address they carry.
func parseRule(s string) (rule, error) {
	r := rule{text: s}
	if s == "" {
		return r, invalidRule(s, "empty")
	}
	if len(s) > maxRuleLen {
		return r, invalidRule(s[:32]+"…", "longer than "+strconv.Itoa(maxRuleLen)+" bytes")
	}
	if strings.TrimSpace(s) != s {
		return r, invalidRule(s, "leading or trailing space")
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return r, invalidRule(s, "not a CIDR range: "+err.Error())
		}
		if p.Addr().Zone() != "" {
			return r, invalidRule(s, "an address zone is not allowed")
		}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return r, invalidRule(s, "an IPv4-mapped range must be at least /96")
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		r.prefix = p.Masked()
		return r, nil
	}
	if ip, err := netip.ParseAddr(s); err == nil {
		return r, r.setAddr(ip)
	}
	host := s
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 || p[0] == '0' || p[0] == '+' {
			return r, invalidRule(s, "the port must be a number from 1 to 65535")
		}
		r.port = uint16(n)
		host = h
		if ip, err := netip.ParseAddr(h); err == nil {
			return r, r.setAddr(ip)
		}
	} else if strings.Contains(s, ":") {
		return r, invalidRule(s, "not a host, host:port, IP, [IPv6]:port or CIDR")
	}
	wild := false
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		wild, host = true, rest
	}
	name, ok := normalName(host)
	if !ok {
		return r, invalidRule(s, "not a valid host name")
	}
	if _, err := netip.ParseAddr(name); err == nil || looksNumeric(name) {
		return r, invalidRule(s, "a wildcard or name cannot be an IP address")
	}
	if wild {
		r.suffix = "." + name
	} else {
		r.name = name
	}
	return r, nil
}

func (r *rule) setAddr(ip netip.Addr) error {
	if ip.Zone() != "" {
		return invalidRule(r.text, "an address zone is not allowed")
	}
	ip = ip.Unmap()
	r.prefix = netip.PrefixFrom(ip, ip.BitLen())
	return nil
}

// normalName lower-cases a host name and drops one trailing dot; it
// reports false for anything but dot-separated labels of 1–63 letters,
// digits, '-' and '_' (not starting or ending with '-'), 253 bytes at most.
func normalName(h string) (string, bool) {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return "", false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", false
			}
		}
	}
	return strings.ToLower(h), true
}

// looksNumeric reports a name whose last label is all digits, such as
// "127.1" or "2130706433": some resolvers read those as IPv4 addresses,
// so they are not accepted as names in rules.
func looksNumeric(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			return false
		}
	}
	return true
}

// special is one address range refused unless an address rule allows it.
type special struct {
	prefix netip.Prefix
	name   string
}

// specials are the ranges that do not reach the public Internet, most
// specific first (the first match names the refusal).
var specials = func() []special {
	var out []special
	for _, s := range [][2]string{
		{"169.254.169.254/32", "cloud metadata"},
		{"fd00:ec2::254/128", "cloud metadata"},
		{"0.0.0.0/8", "unspecified (this network)"},
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "shared address space (CGNAT)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "IETF protocol assignments"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "benchmarking"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"},
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::/96", "IPv4-compatible (deprecated)"},
		{"::ffff:0:0:0/96", "IPv4-translated"},
		{"64:ff9b:1::/48", "local-use NAT64"},
		{"100::/64", "discard-only"},
		{"fc00::/7", "unique local (private)"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local (deprecated)"},
		{"ff00::/8", "multicast"},
	} {
		out = append(out, special{netip.MustParsePrefix(s[0]), s[1]})
	}
	return out
}()

var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// classify returns why ip is not a public address ("loopback
// 127.0.0.0/8"), or "" for a public one. IPv4-mapped IPv6 addresses are
// classified as their IPv4 address, and so are the IPv4 addresses that
// NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses carry.
func classify(ip netip.Addr) string {
	ip = ip.Unmap()
	if ip.Is6() {
		b := ip.As16()
		var v4 netip.Addr
		switch {
		case nat64.Contains(ip):
			v4 = netip.AddrFrom4([4]byte(b[12:16]))
		case sixTo4.Contains(ip):
			v4 = netip.AddrFrom4([4]byte(b[2:6]))
		}
		if v4.IsValid() {
			if why := classify(v4); why != "" {
				return why + " (embedded in " + ip.String() + ")"
			}
			return ""
		}
	}
	for _, s := range specials {
		if s.prefix.Contains(ip) {
			return s.name + " " + s.prefix.String()
		}
	}
	return ""
}

// String returns the rule in its canonical form ("*.example.com:443",
// "10.0.0.0/8", "[::1]:8080"); parsing it gives the same rule.
func (r *rule) String() string {
	var h string
	switch {
	case r.name != "":
		h = r.name
	case r.suffix != "":
		h = "*" + r.suffix
	case r.prefix.IsSingleIP():
		h = r.prefix.Addr().String()
	default:
		return r.prefix.String()
	}
	if r.port == 0 {
		return h
	}
	return net.JoinHostPort(h, strconv.Itoa(int(r.port)))
}
