package egress

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/clutchprotocol/clutch/internal/coded"
)

// DefaultMaxRedirects is how many redirects HTTPClient follows when
// HTTPOptions.MaxRedirects is 0.
const DefaultMaxRedirects = 10

// Transport returns a new *http.Transport that dials through the policy:
// the defaults of http.DefaultTransport, with DialContext set to
// p.DialContext (TLS is negotiated over that connection) and Proxy nil.
// Proxies are off because a proxy would make the connection for us, to a
// destination the policy never sees; a host that must use one sets
// Transport.Proxy itself and allows the proxy's address, knowing the
// policy then checks only that address.
func (p *Policy) Transport() *http.Transport {
	var t *http.Transport
	if d, ok := http.DefaultTransport.(*http.Transport); ok {
		t = d.Clone()
	} else { // a host replaced http.DefaultTransport: the same defaults
		t = &http.Transport{ForceAttemptHTTP2: true, MaxIdleConns: 100, IdleConnTimeout: 90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second, ExpectContinueTimeout: time.Second}
	}
	t.Proxy = nil
	t.DialContext = p.DialContext
	t.DialTLSContext = nil
	return t
}

// HTTPOptions configures HTTPClient. Nil means defaults.
type HTTPOptions struct {
	// Timeout bounds a whole request, body included; none when 0.
	Timeout time.Duration
	// MaxRedirects is how many redirects a request follows;
	// DefaultMaxRedirects when 0, none when negative (the 3xx response is
	// returned as it is).
	MaxRedirects int
}

// HTTPClient returns an *http.Client whose Transport is p.Transport().
// Every redirect hop dials through the policy like the first request;
// besides, a redirect to a scheme other than http or https, or from https
// to http, is refused with a [*DeniedError].
func (p *Policy) HTTPClient(opts *HTTPOptions) (*http.Client, error) {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	if o.Timeout < 0 {
		return nil, coded.Wrap(ErrInvalidOptions, "Timeout must not be negative", nil)
	}
	if o.MaxRedirects == 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	return &http.Client{Transport: p.Transport(), Timeout: o.Timeout, CheckRedirect: checkRedirect(o.MaxRedirects)}, nil
}

// Client returns a copy of base (a zero client when nil) that dials
// through the policy, and the transport it dials with, for a caller that
// wraps it in a RoundTripper of its own. base's Transport must be nil or an
// *http.Transport: it is cloned with the policy's dialer and no proxy. The
// copy's CheckRedirect refuses what [RedirectAllowed] refuses, then applies
// base's own CheckRedirect, or stops after [DefaultMaxRedirects].
func (p *Policy) Client(base *http.Client) (*http.Client, *http.Transport, error) {
	var hc http.Client
	if base != nil {
		hc = *base
	}
	t := p.Transport()
	switch bt := hc.Transport.(type) {
	case nil:
	case *http.Transport:
		t = bt.Clone()
		t.DialContext = p.DialContext
		t.DialTLSContext = nil
		t.Proxy = nil
	default:
		return nil, nil, coded.Wrap(ErrInvalidOptions, "the client's Transport must be an *http.Transport, so that its dials can go through the policy", nil)
	}
	hc.Transport = t
	own := hc.CheckRedirect
	limited := checkRedirect(DefaultMaxRedirects)
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if own == nil {
			return limited(req, via)
		}
		if err := RedirectAllowed(req, via); err != nil {
			return err
		}
		return own(req, via)
	}
	return &hc, t, nil
}

func checkRedirect(limit int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if limit < 0 {
			return http.ErrUseLastResponse
		}
		if len(via) > limit {
			return errors.New("egress: stopped after " + strconv.Itoa(limit) + " redirects")
		}
		if err := RedirectAllowed(req, via); err != nil {
			return err
		}
		return nil
	}
}

// RedirectAllowed is the redirect check of HTTPClient, for callers that
// keep their own CheckRedirect: it refuses a redirect to a scheme other
// than http or https and one from https to http (a downgrade), with a
// [*DeniedError]. The destination itself is checked when it is dialled.
func RedirectAllowed(req *http.Request, via []*http.Request) error {
	u := req.URL
	if u.Scheme != "http" && u.Scheme != "https" {
		return &DeniedError{Host: u.Host, Rule: "redirect to scheme " + quote(u.Scheme)}
	}
	if len(via) > 0 && via[len(via)-1].URL.Scheme == "https" && u.Scheme == "http" {
		return &DeniedError{Host: u.Host, Rule: "redirect from https to http"}
	}
	return nil
}
