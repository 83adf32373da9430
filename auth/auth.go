package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base32"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// Scopes a Caller may hold. A caller without any scope can authenticate
// and do nothing else.
const (
	// ScopeSubmit lets a caller submit tasks (and read, stream, list and
	// cancel its own).
	ScopeSubmit = "submit"
	// ScopeReadAll lets a caller read, stream, list and cancel every
	// caller's tasks and runs, not only its own.
	ScopeReadAll = "read:all"
	// ScopeAgents lets a caller list the exposed agents and their cards.
	ScopeAgents = "agents"
	// ScopeAdmin implies every other scope, and lets a caller write into
	// other callers' runs and read the reserved system runs
	// (docs/protocol.md §6.7).
	ScopeAdmin = "admin"
)

// Scopes lists every scope, in the order of the constants. A Caller of
// APIKeys, ClientCerts or Anonymous with any other scope is refused with
// ErrInvalidConfig when the authenticator is built.
var Scopes = []string{ScopeSubmit, ScopeReadAll, ScopeAgents, ScopeAdmin}

// Caller is who sent a request: an agent id ("agent:..."), stamped as the
// from.agent_id of what it submits, and its scopes.
type Caller struct {
	AgentID string
	Scopes  []string
}

// Has reports whether the caller holds scope (or ScopeAdmin). A nil Caller
// holds nothing.
func (c *Caller) Has(scope string) bool {
	if c == nil {
		return false
	}
	return slices.Contains(c.Scopes, scope) || slices.Contains(c.Scopes, ScopeAdmin)
}

// Owns reports whether the caller may see a task or run submitted by
// agentID: its own, or any with ScopeReadAll.
func (c *Caller) Owns(agentID string) bool {
	return c != nil && (c.AgentID == agentID || c.Has(ScopeReadAll))
}

// MayRead reports whether the caller may read anything at all: its own
// tasks and runs with ScopeSubmit, everybody's with ScopeReadAll. A nil
// Caller may not.
func (c *Caller) MayRead() bool { return c.Has(ScopeSubmit) || c.Has(ScopeReadAll) }

func (c *Caller) validate() error {
	if c == nil || !strings.HasPrefix(c.AgentID, protocol.PrefixAgent) || len(c.AgentID) == len(protocol.PrefixAgent) || len(c.AgentID) > protocol.MaxIDLength {
		id := ""
		if c != nil {
			id = c.AgentID
		}
		return coded.Wrap(ErrInvalidConfig, "caller agent id "+strconvQuote(id)+" must start with agent:", nil)
	}
	for _, s := range c.Scopes {
		if !slices.Contains(Scopes, s) {
			return coded.Wrap(ErrInvalidConfig, "caller "+strconvQuote(c.AgentID)+" has the unknown scope "+strconvQuote(s)+"; the scopes are "+strings.Join(Scopes, ", "), nil)
		}
	}
	return nil
}

func strconvQuote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return "\"" + s + "\""
}

func (c Caller) clone() *Caller {
	c.Scopes = slices.Clone(c.Scopes)
	return &c
}

// Authenticator identifies the caller of a request. It returns
// ErrNoCredentials when the request carries no credentials of its kind,
// another ErrUnauthenticated when it carries bad ones, ErrForbidden when
// the caller is known but refused. It must be safe for concurrent use.
type Authenticator interface {
	Authenticate(r *http.Request) (*Caller, error)
}

// Credential is a kind of credential an Authenticator accepts, for what
// a server declares about itself (an A2A agent card's securitySchemes).
type Credential string

// The credentials of the Authenticators of this package.
const (
	CredentialBearer     Credential = "bearer"      // "Authorization: Bearer <token or key>"
	CredentialAPIKey     Credential = "api_key"     // "X-API-Key: <key>"
	CredentialClientCert Credential = "client_cert" // a verified TLS client certificate (mutual TLS)
	CredentialNone       Credential = "none"        // none at all: anonymous callers are admitted
)

// Credentials returns the kinds of credentials a accepts, in the order
// it tries them: APIKeys takes bearer and API key, Bearer bearer,
// ClientCerts a client certificate, Anonymous none, and Chain those of
// its members. An Authenticator of another kind says what it takes with
// a method Credentials() []Credential; without one, Credentials returns
// nil (nothing is known).
func Credentials(a Authenticator) []Credential {
	d, ok := a.(interface{ Credentials() []Credential })
	if !ok {
		return nil
	}
	return slices.Clone(d.Credentials())
}

// described is an Authenticator of this package that says which
// credentials it takes.
type described struct {
	AuthenticatorFunc
	creds []Credential
}

func (d described) Credentials() []Credential { return d.creds }

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (*Caller, error)

// Authenticate calls f(r).
func (f AuthenticatorFunc) Authenticate(r *http.Request) (*Caller, error) { return f(r) }

type ctxKey struct{}

// NewContext returns ctx carrying c.
func NewContext(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// FromContext returns the caller ctx carries (set by Middleware or
// NewContext).
func FromContext(ctx context.Context) (*Caller, bool) {
	c, ok := ctx.Value(ctxKey{}).(*Caller)
	return c, ok && c != nil
}

// credential returns the API key or bearer token of r: the token of
// "Authorization: Bearer <token>" (scheme case-insensitive, RFC 9110
// §11.1), else the X-API-Key header. ok is false when r has neither; bad
// is true when an Authorization header is there but is not a well-formed
// bearer credential.
func credential(r *http.Request) (token string, ok, bad bool) {
	if h := r.Header.Values("Authorization"); len(h) > 0 {
		if len(h) > 1 {
			return "", false, true
		}
		t, ok := parseBearer(h[0])
		return t, ok, !ok
	}
	if h := r.Header.Values("X-API-Key"); len(h) > 0 {
		if len(h) > 1 || !validToken(h[0]) {
			return "", false, true
		}
		return h[0], true, false
	}
	return "", false, false
}

// parseBearer parses an Authorization header value of the Bearer scheme
// (RFC 6750 §2.1): "Bearer" (any case), one or more spaces, a token68.
func parseBearer(v string) (string, bool) {
	scheme, rest, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok := strings.TrimLeft(rest, " ")
	if !validToken(tok) {
		return "", false
	}
	return tok, true
}

// validToken reports whether t is a token68 (RFC 9110 §11.2) of at most
// 4 KiB: letters, digits, "-._~+/" and trailing "=".
func validToken(t string) bool {
	if t == "" || len(t) > 4096 {
		return false
	}
	eq := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c == '=':
			eq = true
			continue
		case eq:
			return false // "=" only at the end
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/':
		default:
			return false
		}
	}
	return true
}

// hasCredentials reports whether r presents any credential this package
// reads: an Authorization or X-API-Key header, or a client certificate.
func hasCredentials(r *http.Request) bool {
	return len(r.Header.Values("Authorization")) > 0 || len(r.Header.Values("X-API-Key")) > 0 ||
		(r.TLS != nil && len(r.TLS.PeerCertificates) > 0)
}

// keyHash is the stored form of an API key: keys are kept only as SHA-256
// digests, so a dump of the configuration does not leak them.
type keyHash [sha256.Size]byte

type apiKeys struct {
	hashes  []keyHash
	callers []*Caller
}

// APIKeys returns an Authenticator of static API keys, presented as
// "Authorization: Bearer <key>" or "X-API-Key: <key>". keys maps each key
// to its caller. Keys are kept as SHA-256 digests and compared in constant
// time; a key must be a token68 of 16 to 4096 bytes. A request with a
// bearer token that is not one of the keys gets ErrNoCredentials, so that a
// Bearer verifier after it in a Chain can try the token.
func APIKeys(keys map[string]Caller) (Authenticator, error) {
	a := &apiKeys{}
	for k, c := range keys {
		if len(k) < 16 || !validToken(k) {
			return nil, coded.Wrap(ErrInvalidConfig, "an API key must be a token68 of 16 to 4096 bytes", nil)
		}
		if err := c.validate(); err != nil {
			return nil, err
		}
		a.hashes = append(a.hashes, sha256.Sum256([]byte(k)))
		a.callers = append(a.callers, c.clone())
	}
	return a, nil
}

// Credentials implements the method Credentials looks for.
func (a *apiKeys) Credentials() []Credential {
	return []Credential{CredentialBearer, CredentialAPIKey}
}

func (a *apiKeys) Authenticate(r *http.Request) (*Caller, error) {
	tok, ok, bad := credential(r)
	if bad {
		return nil, coded.Wrap(ErrUnauthenticated, "malformed credentials", nil)
	}
	if !ok {
		return nil, ErrNoCredentials
	}
	h := sha256.Sum256([]byte(tok))
	found := -1
	for i := range a.hashes { // every key is compared: the time does not say which matched
		if subtle.ConstantTimeCompare(h[:], a.hashes[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return nil, ErrNoCredentials
	}
	return a.callers[found].clone(), nil
}

// Verifier checks a bearer token (a JWT, an opaque OAuth token) and returns
// its caller: the hook for OIDC and JWT libraries. It returns an error
// wrapping ErrUnauthenticated for a token it refuses.
type Verifier func(ctx context.Context, token string) (*Caller, error)

// Bearer returns an Authenticator that hands the token of
// "Authorization: Bearer <token>" to verify. A request without one gets
// ErrNoCredentials; an error of verify that is not ErrUnauthenticated or
// ErrForbidden is reported as ErrUnauthenticated wrapping it.
func Bearer(verify Verifier) Authenticator {
	return described{creds: []Credential{CredentialBearer}, AuthenticatorFunc: func(r *http.Request) (*Caller, error) {
		h := r.Header.Values("Authorization")
		if len(h) == 0 {
			return nil, ErrNoCredentials
		}
		tok, ok := "", len(h) == 1
		if ok {
			tok, ok = parseBearer(h[0])
		}
		if !ok {
			return nil, coded.Wrap(ErrUnauthenticated, "malformed credentials", nil)
		}
		c, err := verify(r.Context(), tok)
		switch {
		case err != nil && (isUnauthenticated(err) || isForbidden(err)):
			return nil, err
		case err != nil:
			return nil, coded.Wrap(ErrUnauthenticated, "token refused", err)
		case c == nil:
			return nil, coded.Wrap(ErrUnauthenticated, "token refused", nil)
		}
		if err := c.validate(); err != nil {
			return nil, coded.Wrap(ErrUnauthenticated, "the verifier returned a caller without an agent id", nil)
		}
		return c, nil
	}}
}

// SPKIHash returns the lowercase hex SHA-256 of a certificate's
// SubjectPublicKeyInfo: the key ClientCerts maps, stable across
// re-issues of a certificate for the same key.
func SPKIHash(cert *x509.Certificate) string {
	h := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return hex.EncodeToString(h[:])
}

// ClientCerts returns an Authenticator of TLS client certificates, for a
// server that terminates TLS itself with a tls.Config that verifies client
// certificates (ClientCAs and ClientAuth VerifyClientCertIfGiven or
// RequireAndVerifyClientCert). certs maps the leaf certificate of a
// verified chain to its caller, by SPKIHash or by "subject:" followed by
// its subject (x509.Certificate.Subject.String(), e.g. "subject:CN=ken").
// A request without a verified chain gets ErrNoCredentials: a certificate
// the TLS layer did not verify is never read.
func ClientCerts(certs map[string]Caller) (Authenticator, error) {
	m := make(map[string]*Caller, len(certs))
	for k, c := range certs {
		if k == "" {
			return nil, coded.Wrap(ErrInvalidConfig, "empty certificate key", nil)
		}
		if err := c.validate(); err != nil {
			return nil, err
		}
		m[strings.ToLower(k)] = c.clone()
		if strings.HasPrefix(k, "subject:") {
			m[k] = c.clone() // subjects are case-sensitive
		}
	}
	return described{creds: []Credential{CredentialClientCert}, AuthenticatorFunc: func(r *http.Request) (*Caller, error) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
			return nil, ErrNoCredentials
		}
		leaf := r.TLS.VerifiedChains[0][0]
		if c, ok := m[SPKIHash(leaf)]; ok {
			return c.clone(), nil
		}
		if c, ok := m["subject:"+leaf.Subject.String()]; ok {
			return c.clone(), nil
		}
		return nil, coded.Wrap(ErrUnauthenticated, "client certificate not known", nil)
	}}, nil
}

// Chain returns an Authenticator that asks each of as in turn: the first
// caller found wins; an authenticator that finds no credentials of its kind
// (ErrNoCredentials) passes to the next; any other error ends the chain
// (bad credentials never fall through to Anonymous).
func Chain(as ...Authenticator) Authenticator {
	var creds []Credential
	for _, a := range as {
		for _, c := range Credentials(a) {
			if !slices.Contains(creds, c) {
				creds = append(creds, c)
			}
		}
	}
	return described{creds: creds, AuthenticatorFunc: func(r *http.Request) (*Caller, error) {
		for _, a := range as {
			c, err := a.Authenticate(r)
			if err == nil && c != nil {
				return c, nil
			}
			if err != nil && !isNoCredentials(err) {
				return nil, err
			}
		}
		return nil, ErrNoCredentials
	}}
}

// Anonymous returns an Authenticator that admits a request carrying no
// credentials at all as c: the explicit opt-in to anonymous access. Give c
// the least it needs; with no Scopes it reads and submits nothing. A
// request that carries credentials (an Authorization or X-API-Key header, a
// client certificate) is refused with ErrUnauthenticated: put Anonymous
// last in a Chain so that known credentials are tried first. It panics if
// c.AgentID does not start with "agent:".
func Anonymous(c Caller) Authenticator {
	if err := c.validate(); err != nil {
		panic(err)
	}
	cc := c.clone()
	return described{creds: []Credential{CredentialNone}, AuthenticatorFunc: func(r *http.Request) (*Caller, error) {
		if hasCredentials(r) {
			return nil, coded.Wrap(ErrUnauthenticated, "credentials were presented but not accepted", nil)
		}
		return cc.clone(), nil
	}}
}

func isNoCredentials(err error) bool   { return errorsIs(err, ErrNoCredentials) }
func isUnauthenticated(err error) bool { return errorsIs(err, ErrUnauthenticated) }
func isForbidden(err error) bool       { return errorsIs(err, ErrForbidden) }

var runEncoding = base32.NewEncoding("0123456789ABCDEFGHJKMNPQRSTVWXYZ").WithPadding(base32.NoPadding)
