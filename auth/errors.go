package auth

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Match them with errors.Is; each also
// matches its protocol code (errors.Is(err, protocol.CodeUnauthorized)).
var (
	// ErrUnauthenticated: the request carries no credentials, or none that
	// are accepted. HTTP 401 with a WWW-Authenticate header.
	ErrUnauthenticated = coded.New("auth: unauthenticated", protocol.CodeUnauthorized)
	// ErrNoCredentials is the ErrUnauthenticated of an Authenticator that
	// found no credentials of its kind in the request: Chain then asks the
	// next one. errors.Is(ErrNoCredentials, ErrUnauthenticated) holds.
	ErrNoCredentials error = coded.Wrap(ErrUnauthenticated, "no credentials", nil)
	// ErrNotAccepted is the ErrUnauthenticated a Guard answers for a
	// request that presents credentials (an Authorization or X-API-Key
	// header, a client certificate) that no Authenticator accepted, so a
	// surface can tell "no key given" (ErrNoCredentials) from "key not
	// accepted". It depends only on what the request carries, never on
	// the keys. errors.Is(ErrNotAccepted, ErrUnauthenticated) holds;
	// errors.Is(ErrNotAccepted, ErrNoCredentials) does not.
	ErrNotAccepted error = coded.Wrap(ErrUnauthenticated, "credentials not accepted", nil)
	// ErrForbidden: the caller is known but its scopes do not allow the
	// operation. HTTP 403.
	ErrForbidden = coded.New("auth: forbidden", protocol.CodePolicyDenied)
	// ErrRateLimited: the caller is over its rate limit. HTTP 429 with
	// Retry-After.
	ErrRateLimited = coded.New("auth: rate limited", protocol.CodeRateLimited)
	// ErrCapacity: the surface is at its limit of requests in flight.
	// HTTP 503 with Retry-After.
	ErrCapacity = coded.New("auth: at capacity", protocol.CodeCapacity)
	// ErrNotFound: the run, thread or task named does not exist, or is
	// another caller's, or is reserved — answered the same way, so a
	// refusal tells nothing about other callers' ids (CheckWrite). HTTP 404.
	ErrNotFound = coded.New("auth: not found", protocol.CodeNotFound)
	// ErrInvalidConfig: a constructor was given an unusable configuration.
	ErrInvalidConfig = coded.New("auth: invalid configuration", protocol.CodeInvalidField)
)
