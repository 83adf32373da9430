package egress_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
)

func mustPolicy(t *testing.T, o *egress.Options) *egress.Policy {
	t.Helper()
	p, err := egress.New(o)
	require.NoError(t, err)
	return p
}

// denied asserts err is a policy refusal and returns it.
func denied(t *testing.T, err error) *egress.DeniedError {
	t.Helper()
	require.Error(t, err)
	var d *egress.DeniedError
	require.ErrorAs(t, err, &d, "not a refusal: %v", err)
	assert.ErrorIs(t, err, egress.ErrDenied)
	assert.ErrorIs(t, err, protocol.CodePolicyDenied)
	assert.Equal(t, protocol.CodePolicyDenied, protocol.CodeOf(err))
	return d
}

// listener is a loopback TCP listener that counts the connections it
// accepted, so a test can show a refused dial never reached it.
type listener struct {
	net.Listener
	accepted chan net.Conn
}

func newListener(t *testing.T) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := &listener{Listener: ln, accepted: make(chan net.Conn, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(l.accepted)
				return
			}
			l.accepted <- c
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return l
}

func (l *listener) port() string { _, p, _ := net.SplitHostPort(l.Addr().String()); return p }

// nothingAccepted shows that no connection reached l before now: it dials
// l with a policy that allows it and checks that this is the first
// connection l accepts.
func (l *listener) nothingAccepted(t *testing.T) {
	t.Helper()
	ok := mustPolicy(t, &egress.Options{Allow: []string{"127.0.0.1"}})
	c, err := ok.DialContext(context.Background(), "tcp", l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	first := <-l.accepted
	defer first.Close()
	assert.Equal(t, c.LocalAddr().String(), first.RemoteAddr().String(), "an earlier, refused dial reached the listener")
}

func TestDefaultRefusesLoopback(t *testing.T) {
	l := newListener(t)
	_, err := egress.Default().DialContext(context.Background(), "tcp", l.Addr().String())
	d := denied(t, err)
	assert.Equal(t, "127.0.0.1", d.Host)
	assert.Equal(t, l.Addr().String(), d.Address)
	assert.Contains(t, d.Rule, "loopback 127.0.0.0/8")
	assert.Contains(t, err.Error(), "127.0.0.1")
	l.nothingAccepted(t)
}

func TestNameRuleDoesNotOpenPrivateRanges(t *testing.T) {
	dns := newDNSServer(t)
	dns.script("internal.test", []string{"127.0.0.1"})
	l := newListener(t)
	p := mustPolicy(t, &egress.Options{Allow: []string{"internal.test"}, Resolver: dns.resolver()})
	_, err := p.DialContext(context.Background(), "tcp", "internal.test:"+l.port())
	d := denied(t, err)
	assert.Equal(t, "internal.test", d.Host)
	assert.Equal(t, "127.0.0.1:"+l.port(), d.Address)

	// With the range allowed too, the same dial goes through.
	p = mustPolicy(t, &egress.Options{Allow: []string{"internal.test", "127.0.0.0/8"}, Resolver: dns.resolver()})
	l.nothingAccepted(t)
	c, err := p.DialContext(context.Background(), "tcp", "internal.test:"+l.port())
	require.NoError(t, err)
	c.Close()
}

// TestRebinding: the name resolves to a public address when checked and
// to 127.0.0.1 when dialled; the dial is refused on the address it would
// have connected to.
func TestRebinding(t *testing.T) {
	dns := newDNSServer(t)
	dns.script("rebind.test", []string{"203.0.113.7"}, []string{"127.0.0.1"})
	l := newListener(t)
	p := mustPolicy(t, &egress.Options{Resolver: dns.resolver()})
	addr := "rebind.test:" + l.port()

	require.NoError(t, p.Check(context.Background(), addr), "the first answer is public")
	_, err := p.DialContext(context.Background(), "tcp", addr)
	d := denied(t, err)
	assert.Equal(t, "rebind.test", d.Host)
	assert.Equal(t, "127.0.0.1:"+l.port(), d.Address)
	assert.Contains(t, d.Rule, "loopback")
	assert.Equal(t, 2, dns.queries("rebind.test"), "the dial resolved the name again")
	l.nothingAccepted(t)

	// And through HTTP, after CheckURL said yes.
	dns.script("rebind.test", []string{"203.0.113.7"}, []string{"127.0.0.1"})
	hc, err := p.HTTPClient(nil)
	require.NoError(t, err)
	require.NoError(t, p.CheckURL(context.Background(), "http://"+addr+"/"))
	_, err = hc.Get("http://" + addr + "/")
	denied(t, err)
	l.nothingAccepted(t)
}

func TestAllowedLoopbackHTTP(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer hs.Close()
	for _, allow := range []string{"127.0.0.1", "127.0.0.0/8", strings.TrimPrefix(hs.URL, "http://"), "::ffff:127.0.0.1"} {
		p := mustPolicy(t, &egress.Options{Allow: []string{allow}})
		hc, err := p.HTTPClient(nil)
		require.NoError(t, err)
		resp, err := hc.Get(hs.URL)
		require.NoError(t, err, allow)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, "ok", string(b))
		assert.Nil(t, p.Transport().Proxy, "proxies are off")
	}
	// Another port of the same address is not allowed by a host:port rule.
	p := mustPolicy(t, &egress.Options{Allow: []string{"127.0.0.1:1"}})
	hc, _ := p.HTTPClient(nil)
	_, err := hc.Get(hs.URL)
	denied(t, err)
}

func TestRedirects(t *testing.T) {
	other := newListener(t)
	var target string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusFound)
	}))
	defer hs.Close()
	p := mustPolicy(t, &egress.Options{Allow: []string{strings.TrimPrefix(hs.URL, "http://")}})
	hc, err := p.HTTPClient(nil)
	require.NoError(t, err)
	for _, tc := range []struct{ target, rule string }{
		{"http://127.0.0.1:" + other.port() + "/", "loopback"},
		{"http://169.254.169.254/latest/meta-data/", "cloud metadata"},
		{"http://[::ffff:169.254.169.254]/", "cloud metadata"},
		{"http://[fe80::1]:80/", "link-local"},
		{"http://10.1.2.3/", "private"},
		{"file:///etc/passwd", "scheme"},
	} {
		target = tc.target
		_, err := hc.Get(hs.URL)
		d := denied(t, err)
		assert.Contains(t, d.Rule, tc.rule, tc.target)
	}
	other.nothingAccepted(t)

	// No redirects followed: the 302 comes back as it is.
	hc, err = p.HTTPClient(&egress.HTTPOptions{MaxRedirects: -1})
	require.NoError(t, err)
	resp, err := hc.Get(hs.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusFound, resp.StatusCode)
}

func TestRedirectDowngradeRefused(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain") }))
	defer plain.Close()
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL, http.StatusFound)
	}))
	defer tls.Close()
	p := mustPolicy(t, &egress.Options{Allow: []string{"127.0.0.1"}})
	hc, err := p.HTTPClient(nil)
	require.NoError(t, err)
	hc.Transport.(*http.Transport).TLSClientConfig = tls.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	_, err = hc.Get(tls.URL)
	d := denied(t, err)
	assert.Contains(t, d.Rule, "https to http")
}

func TestRestricted(t *testing.T) {
	dns := newDNSServer(t)
	dns.script("api.example.test", []string{"203.0.113.7"})
	dns.script("other.example.test", []string{"203.0.113.8"})
	dns.script("a.b.wild.test", []string{"198.51.100.1"})
	dns.script("wild.test", []string{"198.51.100.2"})
	p := mustPolicy(t, &egress.Options{Restricted: true, Resolver: dns.resolver(),
		Allow: []string{"api.example.test:443", "*.wild.test", "192.0.2.0/24"}})
	assert.Equal(t, "egress-restricted", p.Level())
	ctx := context.Background()
	assert.NoError(t, p.Check(ctx, "API.Example.Test.:443"))
	assert.NoError(t, p.Check(ctx, "a.b.wild.test:8080"))
	assert.NoError(t, p.Check(ctx, "192.0.2.9:25"))
	for _, addr := range []string{"api.example.test:80", "other.example.test:443", "wild.test:443", "198.51.100.1:443"} {
		d := denied(t, p.Check(ctx, addr))
		assert.Contains(t, d.Rule, "egress-restricted", addr)
	}
	// The same names under an open policy: public, so allowed.
	open := mustPolicy(t, &egress.Options{Resolver: dns.resolver()})
	assert.NoError(t, open.Check(ctx, "other.example.test:443"))
}

func TestNetworkLevels(t *testing.T) {
	l := newListener(t)
	base := mustPolicy(t, &egress.Options{Allow: []string{"127.0.0.1"}})
	ctx := context.Background()

	none, err := base.Network("none")
	require.NoError(t, err)
	assert.True(t, none.AllowsNothing())
	_, err = none.DialContext(ctx, "tcp", l.Addr().String())
	assert.Contains(t, denied(t, err).Rule, "network level none")
	absent, err := base.Network("")
	require.NoError(t, err)
	assert.Equal(t, "none", absent.Level(), "an absent level is none (docs/protocol.md §6.4)")

	restricted, err := base.Network("egress-restricted")
	require.NoError(t, err)
	assert.Equal(t, "egress-restricted", restricted.Level())
	c, err := restricted.DialContext(ctx, "tcp", l.Addr().String())
	require.NoError(t, err, "127.0.0.1 is on the allowlist")
	c.Close()

	open, err := base.Network("open")
	require.NoError(t, err)
	assert.Same(t, base, open)
	// A card cannot open up an egress-restricted policy.
	r := mustPolicy(t, &egress.Options{Restricted: true})
	o, err := r.Network("full")
	require.NoError(t, err)
	assert.Equal(t, "egress-restricted", o.Level())

	_, err = base.Network("everything")
	assert.ErrorIs(t, err, egress.ErrInvalidOptions)
}

func TestDialRefusesOddNetworksAndAddresses(t *testing.T) {
	p := mustPolicy(t, &egress.Options{Allow: []string{"127.0.0.1"}})
	ctx := context.Background()
	for _, tc := range [][2]string{{"unix", "/tmp/x.sock"}, {"ip4:icmp", "127.0.0.1"}, {"tcp", "127.0.0.1"}, {"tcp", "127.0.0.1:http"}} {
		_, err := p.DialContext(ctx, tc[0], tc[1])
		denied(t, err)
	}
	_, err := p.DialContext(ctx, "tcp", "0.0.0.0:80")
	assert.Contains(t, denied(t, err).Rule, "unspecified")
	_, err = p.DialContext(ctx, "tcp", "[::]:80")
	assert.Contains(t, denied(t, err).Rule, "unspecified")
	for _, u := range []string{"ftp://example.com/", "http://user:pw@example.com/", "http:///x", "%%"} {
		denied(t, p.CheckURL(ctx, u))
	}
}

func TestInvalidRules(t *testing.T) {
	for _, r := range []string{"", " a.com", "a.com:0", "a.com:65536", "a.com:http", "*", "*.", "a..com", "-a.com",
		"10.0.0.0/33", "fe80::1%eth0", "1.2.3.4:80:80", "::1:80x", "127.1", "*.10", "a.com:080", "x/y"} {
		_, err := egress.New(&egress.Options{Allow: []string{r}})
		assert.ErrorIs(t, err, egress.ErrInvalidRule, "%q", r)
		assert.ErrorIs(t, err, protocol.CodeInvalidField)
	}
}

func TestSpecialRanges(t *testing.T) {
	p := egress.Default()
	ctx := context.Background()
	refused := []string{
		"0.0.0.0", "0.1.2.3", "10.0.0.1", "100.64.0.1", "100.127.255.254", "127.0.0.1", "127.255.255.255",
		"169.254.0.1", "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.8", "192.168.1.1",
		"198.18.0.1", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
		"::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1",
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "2002:a00:1::", "64:ff9b:1::1",
		"fc00::1", "fd00:ec2::254", "fdff::1", "fe80::1", "febf::1", "fec0::1", "ff02::1", "100::1",
	}
	for _, a := range refused {
		err := p.Check(ctx, netip.AddrPortFrom(netip.MustParseAddr(a), 80).String())
		denied(t, err)
	}
	public := []string{"1.1.1.1", "8.8.8.8", "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0",
		"169.253.255.255", "192.169.0.1", "203.0.113.7", "2606:4700::1111", "64:ff9b::808:808", "2002:808:808::1", "::ffff:8.8.8.8"}
	for _, a := range public {
		assert.NoError(t, p.Check(ctx, netip.AddrPortFrom(netip.MustParseAddr(a), 443).String()), a)
	}
}

func TestDeniedErrorSurvivesWrapping(t *testing.T) {
	_, err := egress.Default().DialContext(context.Background(), "tcp", "127.0.0.1:9")
	var op *net.OpError
	require.ErrorAs(t, err, &op)
	wrapped := errors.Join(errors.New("context"), err)
	denied(t, wrapped)
}

func TestPrecheck(t *testing.T) {
	r := mustPolicy(t, &egress.Options{Restricted: true, Allow: []string{"api.example.test", "192.0.2.0/24"}})
	assert.NoError(t, r.PrecheckURL("https://API.example.test/mcp"))
	assert.NoError(t, r.PrecheckURL("http://192.0.2.4:8080/"))
	// A name no name rule matches is refused without resolving it, even
	// though an address rule might match its answer.
	assert.Contains(t, denied(t, r.PrecheckURL("https://other.example.test/")).Rule, "egress-restricted")
	denied(t, r.PrecheckURL("http://198.51.100.1/"))

	open := egress.Default()
	assert.NoError(t, open.PrecheckURL("https://anything.example.test/"), "open: a name is decided when dialled")
	assert.Contains(t, denied(t, open.PrecheckURL("http://127.0.0.1:8080/")).Rule, "loopback")
	assert.Contains(t, denied(t, open.PrecheckURL("http://[::ffff:a9fe:a9fe]/")).Rule, "cloud metadata")
	none, _ := open.Network("none")
	denied(t, none.PrecheckURL("https://anything.example.test/"))
	denied(t, open.PrecheckURL("gopher://x/"))
}

// BenchmarkPrecheck is the per-call check the MCP client makes before
// reusing a connection (no I/O).
func BenchmarkPrecheck(b *testing.B) {
	p, _ := egress.New(&egress.Options{Restricted: true, Allow: []string{"api.example.com:443", "*.internal.example", "10.0.0.0/8"}})
	for b.Loop() {
		if err := p.PrecheckURL("https://api.example.com/mcp"); err != nil {
			b.Fatal(err)
		}
	}
}

// Client keeps a caller's client settings but dials through the policy:
// the caller's CheckRedirect still decides about redirects, each hop's dial
// is checked (a redirect to loopback is refused), and a Transport the
// policy cannot dial through is refused.
func TestClientWrapsACallersClient(t *testing.T) {
	other := newListener(t)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:"+other.port()+"/", http.StatusFound)
	}))
	defer hs.Close()
	p := mustPolicy(t, &egress.Options{Allow: []string{strings.TrimPrefix(hs.URL, "http://")}})
	asked := 0
	base := &http.Client{
		Transport:     &http.Transport{MaxIdleConns: 7},
		CheckRedirect: func(*http.Request, []*http.Request) error { asked++; return nil },
	}
	hc, tr, err := p.Client(base)
	require.NoError(t, err)
	assert.Equal(t, 7, tr.MaxIdleConns, "the caller's transport settings are kept")
	assert.Nil(t, tr.Proxy, "no proxy: it would dial around the policy")
	assert.NotSame(t, base.Transport, tr, "the caller's transport is cloned, not changed")
	_, err = hc.Get(hs.URL)
	assert.Contains(t, denied(t, err).Rule, "loopback")
	assert.Equal(t, 1, asked, "the caller's CheckRedirect is asked about the redirect")
	other.nothingAccepted(t)

	_, _, err = p.Client(&http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil })})
	assert.ErrorIs(t, err, egress.ErrInvalidOptions)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
