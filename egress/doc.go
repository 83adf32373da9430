// Package egress is the one policy for every outbound connection the SDK
// makes — MCP servers over HTTP, A2A remote agents, and any other client
// a host builds with it (webhook deliveries, framework bridges) — so that
// a URL that comes from configuration, a card or a user cannot reach what
// it should not (server-side request forgery), docs/protocol.md §6.
//
// # Rules
//
// A [Policy] is built by [New] from an allowlist ([Options].Allow):
//
//	api.example.com        an exact host name, any port
//	*.example.com          any name below example.com (not example.com itself)
//	api.example.com:443    a name on one port (also *.example.com:443)
//	203.0.113.7            an IP address, any port ([2001:db8::7]:8080 with a port)
//	10.0.0.0/8, fc00::/7   a CIDR range, any port
//
// Names are compared case-insensitively, without a trailing dot, with the
// host as it is dialled; IP and CIDR rules with the address it resolves
// to. IPv4-mapped IPv6 addresses (::ffff:10.0.0.1) are read as the IPv4
// address they carry, and so are the IPv4 addresses inside NAT64
// (64:ff9b::/96) and 6to4 (2002::/16) addresses.
//
// # Decisions
//
// A policy has a network level, the vocabulary of an AgentCard's
// security.network (docs/protocol.md §6.4):
//
//   - open (the default): every public address is reachable;
//   - egress-restricted ([Options].Restricted): only destinations an
//     Allow rule matches, by name or by address;
//   - none: nothing ([Policy.Network] with "none").
//
// At every level an address that is not public is refused unless an IP
// or CIDR rule contains it: unspecified (0.0.0.0/8, ::), private
// (10/8, 172.16/12, 192.168/16, fc00::/7), shared CGNAT (100.64/10),
// loopback (127/8, ::1), link-local (169.254/16, fe80::/10) with the
// cloud metadata addresses (169.254.169.254, fd00:ec2::254), multicast,
// reserved and the other special-purpose ranges. A name rule never opens
// such a range: allowing "internal.example.com" does not let its DNS
// answer send a dial to 10.0.0.7 or 127.0.0.1; allow "10.0.0.0/8" (or
// the address) for that. Tests that talk to httptest servers allow
// "127.0.0.1".
//
// [Policy.Network] derives the policy an agent dials with from its card's
// level; it only ever restricts (an open card under an egress-restricted
// policy stays restricted), and an unknown level is an error.
//
// # Where the check runs
//
// [Policy.DialContext] checks in the net.Dialer's Control hook, once per
// resolved address, just before the socket connects: the address checked
// is the address connected to. A name that resolved to a public address
// when it was checked and to a private one when it is dialled (DNS
// rebinding) is refused at the dial. [Policy.Check] and [Policy.CheckURL]
// resolve and check ahead of time, to refuse a bad URL early; they do not
// replace dialling through the policy.
//
// [Policy.Transport] is an http.Transport that dials through the policy
// (TLS runs over the checked connection), with proxies disabled: a proxy
// makes the connection itself, to a destination the policy never sees.
// [Policy.HTTPClient] adds a redirect check: every hop is dialled through
// the policy like the first, and a redirect to a scheme other than http or
// https, or from https to http, is refused.
//
// # Errors
//
// Every refusal is a [*DeniedError] naming the host, the resolved address
// (when there is one) and the rule that refused it; it wraps [ErrDenied],
// code POLICY_DENIED, and stays visible through the *net.OpError and
// *url.Error around it (errors.Is, errors.As, protocol.CodeOf). A rule
// that does not parse is an [ErrInvalidRule].
//
// # Caveats
//
// The policy governs connections the SDK dials. An MCP server started as
// a process (stdio) makes its own connections, which no dialer in this
// process sees: confine such servers by the operating system (containers,
// network namespaces, firewall rules). Likewise a caller-supplied
// http.RoundTripper that does not dial through the policy is outside it.
package egress
