package egress

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/clutchprotocol/clutch/internal/coded"
)

// Defaults of a zero Options.
const (
	// DefaultDialTimeout bounds one dial (resolution and connect).
	DefaultDialTimeout = 30 * time.Second
	// DefaultKeepAlive is the TCP keep-alive period of dialled connections.
	DefaultKeepAlive = 30 * time.Second
)

// Options configures a Policy. Nil means defaults: open mode, nothing
// allowed beyond the public Internet.
type Options struct {
	// Allow lists the destinations allowed beyond the defaults (see the
	// package doc for the syntax): names and wildcards match the host as
	// dialled; IPs and CIDR ranges match the resolved address. Only an
	// IP or CIDR rule lets a dial reach a private, loopback, link-local or
	// other non-public address.
	Allow []string
	// Restricted makes the policy egress-restricted: only destinations an
	// Allow rule matches are reachable. Otherwise (open) every public
	// address is.
	Restricted bool
	// Resolver resolves host names when dialling; net.DefaultResolver when
	// nil. Tests point it at a DNS server of their own.
	Resolver *net.Resolver
	// Timeout bounds one dial; DefaultDialTimeout when 0.
	Timeout time.Duration
	// KeepAlive is the TCP keep-alive period; DefaultKeepAlive when 0,
	// none when negative.
	KeepAlive time.Duration
}

// mode is a network level (docs/protocol.md §6.4), most restricted first.
type mode uint8

const (
	modeNone mode = iota
	modeRestricted
	modeOpen
)

func (m mode) String() string {
	switch m {
	case modeNone:
		return "none"
	case modeRestricted:
		return "egress-restricted"
	}
	return "open"
}

// Policy decides which destinations outbound connections may reach and
// dials them (see the package doc). It is immutable and safe for
// concurrent use.
type Policy struct {
	rules     []rule
	mode      mode
	resolver  *net.Resolver
	timeout   time.Duration
	keepAlive time.Duration
}

// New returns the policy opts describes; a rule that does not parse is
// an [ErrInvalidRule], naming it.
func New(opts *Options) (*Policy, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout < 0 {
		return nil, coded.Wrap(ErrInvalidOptions, "Timeout must not be negative", nil)
	}
	p := &Policy{mode: modeOpen, resolver: o.Resolver, timeout: o.Timeout, keepAlive: o.KeepAlive}
	if o.Restricted {
		p.mode = modeRestricted
	}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if p.timeout == 0 {
		p.timeout = DefaultDialTimeout
	}
	if p.keepAlive == 0 {
		p.keepAlive = DefaultKeepAlive
	}
	for _, s := range o.Allow {
		r, err := parseRule(s)
		if err != nil {
			return nil, err
		}
		p.rules = append(p.rules, r)
	}
	return p, nil
}

var defaultPolicy, _ = New(nil)

// Default returns the policy of a nil Options: open, every public address
// reachable, every non-public range refused. The MCP client and the A2A
// remote use it when they are given no policy.
func Default() *Policy { return defaultPolicy }

// Network returns the policy an agent whose card states level in
// security.network (docs/protocol.md §6.4) dials with. It only ever
// restricts p: "none" (or "") refuses every destination;
// "egress-restricted" (or "restricted") allows only what p's Allow rules
// match; "open" (or "egress", "full") is p itself. An unknown level is an
// [ErrInvalidOptions]: a card with a level the SDK cannot read gets no
// network.
func (p *Policy) Network(level string) (*Policy, error) {
	var m mode
	switch level {
	case "", "none":
		m = modeNone
	case "egress-restricted", "restricted":
		m = modeRestricted
	case "open", "egress", "full":
		m = modeOpen
	default:
		return nil, coded.Wrap(ErrInvalidOptions, "unknown network level "+quote(level), nil)
	}
	if m >= p.mode {
		return p, nil
	}
	q := *p
	q.mode = m
	return &q, nil
}

// Level returns the policy's network level: "none", "egress-restricted"
// or "open".
func (p *Policy) Level() string { return p.mode.String() }

// AllowsNothing reports a policy of level none, which refuses every
// destination without any I/O.
func (p *Policy) AllowsNothing() bool { return p.mode == modeNone }

// decide is the whole policy: may a dial of name (the host as given,
// normalised; may be an IP literal) reach ip:port? It returns the refusal,
// nil when allowed.
func (p *Policy) decide(host, name string, ip netip.Addr, port uint16) *DeniedError {
	ip = ip.Unmap()
	addr := netip.AddrPortFrom(ip, port).String()
	if p.mode == modeNone {
		return &DeniedError{Host: host, Address: addr, Rule: "network level none"}
	}
	byAddr := false
	matched := false
	for i := range p.rules {
		r := &p.rules[i]
		if r.matchAddr(ip, port) {
			byAddr, matched = true, true
			break
		}
		if !matched && r.matchName(name, port) {
			matched = true
		}
	}
	if why := classify(ip); why != "" && !byAddr {
		return &DeniedError{Host: host, Address: addr, Rule: why + " is refused unless an IP or CIDR rule allows it"}
	}
	if p.mode == modeRestricted && !matched {
		return &DeniedError{Host: host, Address: addr, Rule: "no allow rule matches (egress-restricted)"}
	}
	return nil
}

// preflight refuses what can be refused before resolution: a policy of
// level none, a network that is not TCP or UDP, a malformed address, and
// (egress-restricted) a name no rule could match. It returns the host
// as given, its normalised name and the port.
func (p *Policy) preflight(network, address string) (host, name string, port uint16, err error) {
	return p.preflightStrict(network, address, false)
}

// preflightStrict is preflight; strict (for Precheck) also refuses, under
// egress-restricted, a name that no name rule matches even when address
// rules exist, and decides an IP literal fully.
func (p *Policy) preflightStrict(network, address string, strict bool) (host, name string, port uint16, err error) {
	host, ps, err := net.SplitHostPort(address)
	if err != nil {
		return address, "", 0, &DeniedError{Host: address, Rule: "not a host:port address"}
	}
	switch network {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
	default:
		return host, "", 0, &DeniedError{Host: host, Rule: "network " + quote(network) + " is not TCP or UDP"}
	}
	n, perr := strconv.ParseUint(ps, 10, 16)
	if perr != nil {
		return host, "", 0, &DeniedError{Host: host, Rule: "port " + quote(ps) + " is not a number (service names are not resolved)"}
	}
	port = uint16(n)
	if p.mode == modeNone {
		return host, "", 0, &DeniedError{Host: host, Rule: "network level none"}
	}
	name = strings.ToLower(strings.TrimSuffix(host, "."))
	if ip, lit := parseIP(host); lit && strict {
		if d := p.decide(host, name, ip, port); d != nil {
			return host, "", 0, d
		}
	} else if p.mode == modeRestricted {
		if !lit && (strict || !p.hasAddrRules()) && !p.matchesName(name, port) {
			return host, "", 0, &DeniedError{Host: host, Rule: "no allow rule matches (egress-restricted)"}
		}
	}
	return host, name, port, nil
}

func (p *Policy) hasAddrRules() bool {
	for i := range p.rules {
		if p.rules[i].isAddr() {
			return true
		}
	}
	return false
}

func (p *Policy) matchesName(name string, port uint16) bool {
	for i := range p.rules {
		if p.rules[i].matchName(name, port) {
			return true
		}
	}
	return false
}

func parseIP(host string) (netip.Addr, bool) {
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return netip.Addr{}, false
	}
	return ip, true
}

// Precheck decides, without any I/O, what can be decided before a name
// is resolved: it refuses a policy of level none, a network other than TCP
// or UDP, a malformed address, an IP literal the policy refuses, and under
// egress-restricted a name that no name rule matches. A nil result does
// not promise that a dial succeeds: the resolved address is checked when
// it is dialled. Use it where a connection made earlier, under another
// agent's level, is about to be reused.
func (p *Policy) Precheck(network, address string) error {
	_, _, _, err := p.preflightStrict(network, address, true)
	return err
}

// PrecheckURL is Precheck for an http or https URL.
func (p *Policy) PrecheckURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return &DeniedError{Host: rawURL, Rule: "not a URL"}
	}
	addr, err := urlAddress(u)
	if err != nil {
		return err
	}
	return p.Precheck("tcp", addr)
}

// DialContext dials address ("host:port") on network (tcp or udp, 4 or 6)
// if the policy allows it. The check runs in the dialer's Control hook on
// every resolved address, just before the socket connects, so what is
// checked is what is connected to: a name whose DNS answer changes between
// an earlier Check and the dial (DNS rebinding) is checked again on its new
// address. A refusal is a [*DeniedError] (inside a *net.OpError).
func (p *Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, name, port, err := p.preflight(network, address)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	d := &net.Dialer{
		Timeout:   p.timeout,
		KeepAlive: p.keepAlive,
		Resolver:  p.resolver,
		ControlContext: func(_ context.Context, _, addr string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(addr)
			if err != nil {
				return &DeniedError{Host: host, Address: addr, Rule: "the resolved address cannot be read"}
			}
			if ap.Port() != port {
				return &DeniedError{Host: host, Address: addr, Rule: "the dialled port is not the one asked for"}
			}
			if d := p.decide(host, name, ap.Addr(), port); d != nil {
				return d
			}
			return nil
		},
	}
	return d.DialContext(ctx, network, address)
}

// Check resolves address ("host:port") and reports whether the policy
// allows every address it resolves to now: a [*DeniedError] for the first
// one refused. Use it to refuse a bad destination early (a webhook URL
// when it is registered); it is no substitute for dialling through the
// policy, since DNS answers change.
func (p *Policy) Check(ctx context.Context, address string) error {
	host, name, port, err := p.preflight("tcp", address)
	if err != nil {
		return err
	}
	var ips []netip.Addr
	if ip, ok := parseIP(host); ok {
		ips = []netip.Addr{ip}
	} else {
		ips, err = p.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return err
		}
	}
	for _, ip := range ips {
		if d := p.decide(host, name, ip, port); d != nil {
			return d
		}
	}
	return nil
}

// CheckURL is Check for an http or https URL (port 80 or 443 unless the
// URL names one). Any other scheme, or a URL with user information, is
// refused.
func (p *Policy) CheckURL(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return &DeniedError{Host: rawURL, Rule: "not a URL"}
	}
	addr, err := urlAddress(u)
	if err != nil {
		return err
	}
	return p.Check(ctx, addr)
}

// urlAddress returns the host:port an http(s) URL dials.
func urlAddress(u *url.URL) (string, error) {
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", &DeniedError{Host: u.Host, Rule: "scheme " + quote(u.Scheme) + " is not http or https"}
	}
	if u.User != nil {
		return "", &DeniedError{Host: u.Host, Rule: "a URL with user information is refused"}
	}
	if u.Hostname() == "" {
		return "", &DeniedError{Host: u.Host, Rule: "the URL has no host"}
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

func quote(s string) string { return strconv.Quote(s) }
