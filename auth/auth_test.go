package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
)

const kenKey = "ken-key-0123456789abcdef"

func keys(t *testing.T) Authenticator {
	t.Helper()
	a, err := APIKeys(map[string]Caller{
		kenKey:                     {AgentID: "agent:ken", Scopes: []string{ScopeSubmit}},
		"ops-key-0123456789abcdef": {AgentID: "agent:ops", Scopes: []string{ScopeAdmin}},
	})
	require.NoError(t, err)
	return a
}

func req(h map[string]string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return r
}

func TestAPIKeys(t *testing.T) {
	a := keys(t)
	for _, tc := range []struct {
		name   string
		h      map[string]string
		want   string
		errIs  error
		noCred bool
	}{
		{"bearer", map[string]string{"Authorization": "Bearer " + kenKey}, "agent:ken", nil, false},
		{"bearer any case", map[string]string{"Authorization": "bEaReR   " + kenKey}, "agent:ken", nil, false},
		{"x-api-key", map[string]string{"X-API-Key": kenKey}, "agent:ken", nil, false},
		{"none", nil, "", ErrUnauthenticated, true},
		{"unknown key", map[string]string{"X-API-Key": "nope-0123456789abcdef"}, "", ErrUnauthenticated, true},
		{"basic scheme", map[string]string{"Authorization": "Basic a2VuOmtlbg=="}, "", ErrUnauthenticated, false},
		{"bad token chars", map[string]string{"Authorization": "Bearer a b"}, "", ErrUnauthenticated, false},
		{"key prefix", map[string]string{"X-API-Key": kenKey[:len(kenKey)-1]}, "", ErrUnauthenticated, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := a.Authenticate(req(tc.h))
			if tc.errIs != nil {
				require.ErrorIs(t, err, tc.errIs)
				assert.Equal(t, tc.noCred, errors.Is(err, ErrNoCredentials))
				assert.Equal(t, protocol.CodeUnauthorized, protocol.CodeOf(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, c.AgentID)
		})
	}
	_, err := APIKeys(map[string]Caller{"short": {AgentID: "agent:x"}})
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = APIKeys(map[string]Caller{kenKey: {AgentID: "ken"}})
	require.ErrorIs(t, err, ErrInvalidConfig)
}

func TestCallerScopes(t *testing.T) {
	ken := &Caller{AgentID: "agent:ken", Scopes: []string{ScopeSubmit}}
	ops := &Caller{AgentID: "agent:ops", Scopes: []string{ScopeAdmin}}
	var none *Caller
	assert.True(t, ken.Has(ScopeSubmit))
	assert.False(t, ken.Has(ScopeReadAll))
	assert.True(t, ops.Has(ScopeReadAll))
	assert.False(t, none.Has(ScopeSubmit))
	assert.True(t, ken.Owns("agent:ken"))
	assert.False(t, ken.Owns("agent:ops"))
	assert.True(t, ops.Owns("agent:ken"))
	assert.False(t, none.Owns(""))
}

func TestBearerVerifier(t *testing.T) {
	a := Bearer(func(ctx context.Context, tok string) (*Caller, error) {
		switch tok {
		case "good":
			return &Caller{AgentID: "agent:jwt"}, nil
		case "forbidden":
			return nil, ErrForbidden
		case "noid":
			return &Caller{}, nil
		}
		return nil, errors.New("signature mismatch")
	})
	c, err := a.Authenticate(req(map[string]string{"Authorization": "Bearer good"}))
	require.NoError(t, err)
	assert.Equal(t, "agent:jwt", c.AgentID)
	_, err = a.Authenticate(req(nil))
	require.ErrorIs(t, err, ErrNoCredentials)
	_, err = a.Authenticate(req(map[string]string{"Authorization": "Bearer forged"}))
	require.ErrorIs(t, err, ErrUnauthenticated)
	require.False(t, errors.Is(err, ErrNoCredentials))
	_, err = a.Authenticate(req(map[string]string{"Authorization": "Bearer forbidden"}))
	require.ErrorIs(t, err, ErrForbidden)
	_, err = a.Authenticate(req(map[string]string{"Authorization": "Bearer noid"}))
	require.ErrorIs(t, err, ErrUnauthenticated)
}

// TestChainNeverFallsToAnonymous: a wrong key is refused, not admitted as
// the anonymous caller.
func TestChainNeverFallsToAnonymous(t *testing.T) {
	a := Chain(keys(t), Anonymous(Caller{AgentID: "agent:anon"}))
	c, err := a.Authenticate(req(nil))
	require.NoError(t, err)
	assert.Equal(t, "agent:anon", c.AgentID)
	assert.Empty(t, c.Scopes)
	for _, h := range []map[string]string{{"X-API-Key": "wrong-0123456789abcdef"}, {"Authorization": "Bearer wrong-0123456789abcdef"}, {"Authorization": "garbage"}} {
		_, err := a.Authenticate(req(h))
		require.ErrorIs(t, err, ErrUnauthenticated, "%v", h)
	}
	c, err = a.Authenticate(req(map[string]string{"X-API-Key": kenKey}))
	require.NoError(t, err)
	assert.Equal(t, "agent:ken", c.AgentID)
	_, err = Chain().Authenticate(req(nil))
	require.ErrorIs(t, err, ErrNoCredentials)
}

func selfSigned(t *testing.T, cn string) *x509.Certificate {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	require.NoError(t, err)
	c, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return c
}

func TestClientCerts(t *testing.T) {
	ken, ops, eve := selfSigned(t, "ken"), selfSigned(t, "ops"), selfSigned(t, "eve")
	a, err := ClientCerts(map[string]Caller{
		SPKIHash(ken):    {AgentID: "agent:ken"},
		"subject:CN=ops": {AgentID: "agent:ops"},
	})
	require.NoError(t, err)
	withTLS := func(c *x509.Certificate, verified bool) *http.Request {
		r := req(nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
		if verified {
			r.TLS.VerifiedChains = [][]*x509.Certificate{{c}}
		}
		return r
	}
	c, err := a.Authenticate(withTLS(ken, true))
	require.NoError(t, err)
	assert.Equal(t, "agent:ken", c.AgentID)
	c, err = a.Authenticate(withTLS(ops, true))
	require.NoError(t, err)
	assert.Equal(t, "agent:ops", c.AgentID)
	_, err = a.Authenticate(withTLS(eve, true))
	require.ErrorIs(t, err, ErrUnauthenticated)
	_, err = a.Authenticate(withTLS(ken, false)) // presented, not verified by TLS
	require.ErrorIs(t, err, ErrNoCredentials)
	_, err = a.Authenticate(req(nil))
	require.ErrorIs(t, err, ErrNoCredentials)
}

func TestMiddlewareRefusesWithoutData(t *testing.T) {
	reached := false
	h := Middleware(keys(t), nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = true
		_, _ = w.Write([]byte("secret"))
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req(map[string]string{"X-API-Key": "wrong-0123456789abcdef"}))
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
	assert.Equal(t, `Bearer realm="clutch"`, rec.Header().Get("WWW-Authenticate"))
	assert.NotContains(t, rec.Body.String(), "secret")
	assert.False(t, reached)
	assert.Panics(t, func() { Middleware(nil, nil) })
	_, err := NewGuard(nil, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)
}

func TestForbiddenIs403(t *testing.T) {
	h := Middleware(AuthenticatorFunc(func(*http.Request) (*Caller, error) { return nil, ErrForbidden }), nil)(http.NotFoundHandler())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req(nil))
	assert.Equal(t, http.StatusForbidden, rec.Code)
}

func TestRateLimitPerCaller(t *testing.T) {
	h := Middleware(keys(t), &Options{Rate: 0.001, Burst: 2})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	codes := func(key string, n int) []int {
		var out []int
		for range n {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req(map[string]string{"X-API-Key": key}))
			out = append(out, rec.Code)
			if rec.Code == http.StatusTooManyRequests {
				assert.Equal(t, "1", rec.Header().Get("Retry-After"))
				assert.Contains(t, rec.Body.String(), `"RATE_LIMITED"`)
			}
		}
		return out
	}
	assert.Equal(t, []int{200, 200, 429}, codes(kenKey, 3))
	// Another caller has its own bucket.
	assert.Equal(t, []int{200, 200, 429}, codes("ops-key-0123456789abcdef", 3))
}

func TestMaxInFlightFailsFast(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	h := Middleware(keys(t), &Options{MaxInFlight: 1, RetryAfter: 2500 * time.Millisecond})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	var wg sync.WaitGroup
	wg.Go(func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req(map[string]string{"X-API-Key": kenKey}))
		assert.Equal(t, 200, rec.Code)
	})
	<-entered
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req(map[string]string{"X-API-Key": kenKey}))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "3", rec.Header().Get("Retry-After"))
	close(release)
	wg.Wait()
	// The slot is back.
	go func() { <-entered }()
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req(map[string]string{"X-API-Key": kenKey}))
	assert.Equal(t, 200, rec.Code)
}

func TestBodyLimit(t *testing.T) {
	h := Middleware(keys(t), &Options{MaxBodyBytes: 4})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b [16]byte
		_, err := r.Body.Read(b[:])
		for err == nil {
			_, err = r.Body.Read(b[:])
		}
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
		}
	}))
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("0123456789"))
	r.Header.Set("X-API-Key", kenKey)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
}

func TestStatus(t *testing.T) {
	assert.Equal(t, 401, Status(ErrNoCredentials))
	assert.Equal(t, 403, Status(ErrForbidden))
	assert.Equal(t, 429, Status(ErrRateLimited))
	assert.Equal(t, 503, Status(ErrCapacity))
	assert.Equal(t, 503, Status(protocol.CodeCapacity))
}

func TestRateLimiterMapIsBounded(t *testing.T) {
	g, err := NewGuard(AuthenticatorFunc(func(r *http.Request) (*Caller, error) {
		return &Caller{AgentID: "agent:" + r.Header.Get("X-Who")}, nil
	}), &Options{Rate: 1, MaxCallers: 3})
	require.NoError(t, err)
	for i := range 10 {
		_, release, err := g.Admit(req(map[string]string{"X-Who": strings.Repeat("x", i+1)}))
		require.NoError(t, err)
		release()
	}
	assert.Len(t, g.lims, 3)
	assert.Len(t, g.order, 3)
}

// FuzzCredential: header parsing never panics, and whatever it accepts is
// a token68 that a Bearer header made from it gives back.
func FuzzCredential(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer  abc==", "Basic x", "Bearer", "Bearer ", "Bearer a=b", "Bearer \x00", "BEARER ÿ", ""} {
		f.Add(s, "k")
	}
	f.Fuzz(func(t *testing.T, authz, apiKey string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if authz != "" {
			r.Header["Authorization"] = []string{authz}
		}
		if apiKey != "" {
			r.Header["X-Api-Key"] = []string{apiKey}
		}
		tok, ok, bad := credential(r)
		if ok && bad {
			t.Fatal("ok and bad")
		}
		if ok {
			if !validToken(tok) {
				t.Fatalf("accepted %q", tok)
			}
			if authz != "" {
				if !strings.HasSuffix(authz, tok) {
					t.Fatalf("token %q not from %q", tok, authz)
				}
			}
		}
	})
}
