package auth

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/internal/httpjson"
	"github.com/clutchprotocol/clutch/protocol"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// Defaults of a zero Options.
const (
	DefaultRealm      = "clutch"
	DefaultRetryAfter = time.Second
	DefaultMaxCallers = 10000
)

// Options configures Middleware. Nil means defaults: no rate limit, no
// admission limit, no body limit beyond the surface's own.
type Options struct {
	// Realm is the realm of the WWW-Authenticate challenge of a 401;
	// DefaultRealm when "".
	Realm string
	// Rate is each caller's sustained request rate per second and Burst
	// its bucket (a token bucket per caller agent id); no limit when Rate
	// is 0. Burst is 1 when 0 and Rate is set. A caller over it gets 429
	// RATE_LIMITED with Retry-After.
	Rate  float64
	Burst int
	// MaxInFlight bounds the requests the surface serves at once (streams
	// and blocking calls included); none when 0. A request past it gets 503
	// CAPACITY with Retry-After at once: it never waits.
	MaxInFlight int
	// MaxInFlightPerCaller bounds the requests one caller (agent id) has
	// in flight at once, streams included, so that one caller cannot hold
	// the whole of MaxInFlight; past it the caller gets 503 CAPACITY at
	// once. When 0 it is a quarter of MaxInFlight (at least 1), or none
	// when MaxInFlight is 0; negative means none.
	MaxInFlightPerCaller int
	// MaxBodyBytes bounds every request body; none when 0. The surface's
	// own limit still applies.
	MaxBodyBytes int64
	// RetryAfter is the Retry-After of a 503; DefaultRetryAfter when 0.
	RetryAfter time.Duration
	// MaxCallers bounds the rate limiters kept (one per caller agent id);
	// DefaultMaxCallers when 0. Past it the least recently created is
	// forgotten, so its caller starts with a full bucket.
	MaxCallers int
}

func (o *Options) setDefaults() error {
	if o.Rate < 0 || math.IsNaN(o.Rate) || o.Burst < 0 || o.MaxInFlight < 0 || o.MaxBodyBytes < 0 || o.RetryAfter < 0 || o.MaxCallers < 0 {
		return coded.Wrap(ErrInvalidConfig, "limits must not be negative (MaxInFlightPerCaller may: it then means none)", nil)
	}
	if o.Realm == "" {
		o.Realm = DefaultRealm
	}
	if o.Rate > 0 && o.Burst == 0 {
		o.Burst = 1
	}
	if o.RetryAfter == 0 {
		o.RetryAfter = DefaultRetryAfter
	}
	if o.MaxCallers == 0 {
		o.MaxCallers = DefaultMaxCallers
	}
	if o.MaxInFlightPerCaller == 0 && o.MaxInFlight > 0 {
		o.MaxInFlightPerCaller = max(1, o.MaxInFlight/4)
	}
	return nil
}

// Guard authenticates and limits requests: the one mechanism every inbound
// surface uses. Build it with NewGuard; Middleware wraps a handler in one.
type Guard struct {
	a    Authenticator
	opts Options
	sem  chan struct{}

	mu     sync.Mutex
	lims   map[string]*rate.Limiter
	order  []string       // agent ids in creation order, for eviction
	flying map[string]int // requests in flight per caller agent id, when bounded
}

// NewGuard returns a Guard over a. opts may be nil. a must not be nil:
// anonymous access is configured with Anonymous, never by omission.
func NewGuard(a Authenticator, opts *Options) (*Guard, error) {
	if a == nil {
		return nil, coded.Wrap(ErrInvalidConfig, "an Authenticator is required (use auth.Anonymous to allow anonymous callers)", nil)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	g := &Guard{a: a, opts: o, lims: map[string]*rate.Limiter{}, flying: map[string]int{}}
	if o.MaxInFlight > 0 {
		g.sem = make(chan struct{}, o.MaxInFlight)
	}
	return g, nil
}

// Middleware returns a middleware that authenticates each request with a
// and applies opts: the caller is put in the request's context
// (FromContext); a request that does not authenticate gets 401 with a
// WWW-Authenticate challenge (403 for ErrForbidden) and never reaches next.
// It panics when a is nil or opts is invalid; use NewGuard to get an error.
func Middleware(a Authenticator, opts *Options) func(http.Handler) http.Handler {
	g, err := NewGuard(a, opts)
	if err != nil {
		panic(err)
	}
	return g.Wrap
}

// Wrap returns next behind the guard.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, release, err := g.Admit(r)
		if err != nil {
			g.WriteError(w, err)
			return
		}
		defer release()
		if g.opts.MaxBodyBytes > 0 && r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes)
		}
		next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), c)))
	})
}

// Admit authenticates r, then takes a token of the caller's rate limit, a
// slot of the caller's MaxInFlightPerCaller and one of MaxInFlight.
// release gives the slots back; call it when the request is done. A
// request that is not authenticated gets ErrNoCredentials when it carries
// no credentials and ErrNotAccepted when it carries some that no
// Authenticator took.
func (g *Guard) Admit(r *http.Request) (c *Caller, release func(), err error) {
	c, err = g.a.Authenticate(r)
	if err == nil && c == nil {
		err = ErrNoCredentials
	}
	if err != nil {
		switch {
		case isNoCredentials(err) && hasCredentials(r):
			// Credentials were there, and nobody took them.
			err = ErrNotAccepted
		case !errors.Is(err, ErrUnauthenticated) && !errors.Is(err, ErrForbidden):
			err = coded.Wrap(ErrUnauthenticated, "", err)
		}
		return nil, nil, err
	}
	if !g.allow(c.AgentID) {
		return nil, nil, ErrRateLimited
	}
	if !g.take(c.AgentID) {
		return nil, nil, coded.Wrap(ErrCapacity, "the caller has "+strconv.Itoa(g.opts.MaxInFlightPerCaller)+" requests in flight, its limit", nil)
	}
	if g.sem != nil {
		select {
		case g.sem <- struct{}{}:
		default:
			g.put(c.AgentID)
			return nil, nil, ErrCapacity
		}
	}
	var once sync.Once
	id := c.AgentID
	release = func() {
		once.Do(func() {
			if g.sem != nil {
				<-g.sem
			}
			g.put(id)
		})
	}
	return c, release, nil
}

// take counts a request of agentID in flight; false when the caller is at
// MaxInFlightPerCaller.
func (g *Guard) take(agentID string) bool {
	if g.opts.MaxInFlightPerCaller <= 0 {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.flying[agentID] >= g.opts.MaxInFlightPerCaller {
		return false
	}
	g.flying[agentID]++
	return true
}

// put ends a request take counted.
func (g *Guard) put(agentID string) {
	if g.opts.MaxInFlightPerCaller <= 0 {
		return
	}
	g.mu.Lock()
	if n := g.flying[agentID] - 1; n > 0 {
		g.flying[agentID] = n
	} else {
		delete(g.flying, agentID)
	}
	g.mu.Unlock()
}

func (g *Guard) allow(agentID string) bool {
	if g.opts.Rate == 0 {
		return true
	}
	g.mu.Lock()
	l, ok := g.lims[agentID]
	if !ok {
		if len(g.order) >= g.opts.MaxCallers {
			delete(g.lims, g.order[0])
			g.order = g.order[1:]
		}
		l = rate.NewLimiter(rate.Limit(g.opts.Rate), g.opts.Burst)
		g.lims[agentID] = l
		g.order = append(g.order, agentID)
	}
	g.mu.Unlock()
	return l.Allow()
}

// Status returns the HTTP status a surface answers for err: 401 for
// ErrUnauthenticated, 403 for ErrForbidden, 429 for RATE_LIMITED, 503 for
// CAPACITY (the router's admission limit included), else the status of its
// protocol code.
func Status(err error) int {
	switch {
	case errors.Is(err, ErrUnauthenticated):
		return http.StatusUnauthorized
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, protocol.CodeRateLimited):
		return http.StatusTooManyRequests
	case errors.Is(err, protocol.CodeCapacity):
		return http.StatusServiceUnavailable
	}
	return httpjson.Status(protocol.CodeOf(err))
}

// SetHeaders sets the headers that go with Status(err): a WWW-Authenticate
// challenge for 401 and Retry-After for 429 and 503.
func (g *Guard) SetHeaders(w http.ResponseWriter, err error) {
	switch Status(err) {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer realm=%q", g.opts.Realm))
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(g.opts.RetryAfter.Seconds())))))
	}
}

// WriteError answers a refused request: the status and headers of err and
// a JSON body {"error", "code", "message"} that says nothing about the
// caller or the data.
func (g *Guard) WriteError(w http.ResponseWriter, err error) {
	g.SetHeaders(w, err)
	status := Status(err)
	code := protocol.CodeOf(err)
	name := map[int]string{401: "unauthorized", 403: "forbidden", 429: "rate_limited", 503: "capacity"}[status]
	if name == "" {
		name = "error"
	}
	msg := http.StatusText(status)
	switch {
	case errors.Is(err, ErrNoCredentials):
		msg = "no credentials given (send Authorization: Bearer KEY)"
	case status == http.StatusUnauthorized:
		msg = "credentials not accepted"
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "{\"error\":%q,\"code\":%q,\"message\":%q}\n", name, code, msg)
}
