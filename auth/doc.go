// Package auth is the one authenticator and limiter of Clutch's inbound
// surfaces (the A2A server and the simple HTTP surface of docs/protocol.md
// §13.2, the MCP server over Streamable HTTP; the gateway and webhooks use
// it too). It maps a request to a [Caller] — an agent id and scopes — that
// the surface stamps on what the caller submits (task.request from =
// Caller.AgentID) and checks before it shows anything.
//
// # Basics
//
// Pick the credentials the surface accepts, then wrap the surface:
//
//	keys, err := auth.APIKeys(map[string]auth.Caller{
//		os.Getenv("KEN_KEY"): {AgentID: "agent:ken", Scopes: []string{auth.ScopeSubmit}},
//	})
//	a := auth.Chain(keys, auth.Bearer(verifyJWT), auth.Anonymous(auth.Caller{AgentID: "agent:anonymous"}))
//	http.Handle("/", auth.Middleware(a, &auth.Options{Rate: 5, Burst: 10, MaxInFlight: 256})(surface))
//
// The built-ins:
//   - [APIKeys]: static keys sent as "Authorization: Bearer <key>" or
//     "X-API-Key: <key>"; kept as SHA-256 digests, compared in constant time.
//   - [Bearer]: a token handed to a [Verifier], the hook for OIDC/JWT
//     libraries.
//   - [ClientCerts]: TLS client certificates verified by the server's own
//     tls.Config, mapped by SPKI SHA-256 ([SPKIHash]) or subject.
//   - [Chain]: several of them, in order.
//   - [Anonymous]: the explicit opt-in to callers without credentials. Give
//     it no scopes and it reads and submits nothing.
//
// There is no anonymous default: [NewGuard] and [Middleware] refuse a nil
// Authenticator, and so do the surfaces built on them.
//
// # Scopes and tenancy
//
// The tenancy model is docs/protocol.md §6.7; this package implements it
// once for every surface. A caller always sees its own tasks and runs:
// those whose first event (a task's task.request) it sent. [ScopeSubmit]
// lets it submit; [ScopeReadAll] lets it read, stream, list and cancel
// everybody's; [ScopeAgents] lets it list the exposed agents; [ScopeAdmin]
// implies all of them and is the only scope that reaches reserved system
// runs (protocol.Reserved).
//
// [CheckWrite] is the check before every outside write: another caller's
// run, thread or task, a reserved id and an unreadable parent task are all
// refused as [ErrNotFound], the answer for a missing id. A new id the
// client named is claimed for the caller in the same call (a claim record
// the store keeps once per id), so two callers creating one id at once
// cannot both land. [MayRead] is the check before every read, [Owner] says
// who owns an id, and a [Deriver] makes the ids a surface derives from a
// caller's keys — HMACs under a secret kept in the store, which nobody
// outside can compute. [Caller.Has] and [Caller.Owns] are the scope checks.
//
// # Limits
//
// [Options] adds a token bucket per caller (Rate, Burst: over it, 429
// RATE_LIMITED), a bound on requests in flight in all (MaxInFlight) and per
// caller (MaxInFlightPerCaller, by default a quarter of MaxInFlight; past
// either, 503 CAPACITY at once, never a queue) and a body size limit. Both
// refusals carry Retry-After. The router's own admission refusal (CAPACITY) maps to
// the same 503 through [Status].
//
// The token buckets are golang.org/x/time/rate's Limiter, the Go team's
// maintained implementation (the module's one dependency beyond those the
// project names): a rate limiter is easy to get subtly wrong, and this one
// is what Go servers already use.
//
// # Errors
//
// [ErrUnauthenticated] (UNAUTHORIZED, 401 with a WWW-Authenticate
// challenge), [ErrNoCredentials] (an ErrUnauthenticated: nothing of an
// authenticator's kind in the request), [ErrNotAccepted] (an
// ErrUnauthenticated: credentials were presented and none was accepted),
// [ErrForbidden] (POLICY_DENIED, 403), [ErrRateLimited] (RATE_LIMITED,
// 429), [ErrCapacity] (CAPACITY, 503) and [ErrInvalidConfig]. A Guard
// answers a request without credentials ErrNoCredentials ("no credentials
// given") and one with credentials it refused ErrNotAccepted
// ("credentials not accepted"): the difference is what the request
// carries, which its sender knows, never anything about the keys. A
// refused request never reaches the surface, and the answer never says
// which credential was close.
//
// # Caveats
//
// ClientCerts reads only chains the TLS layer verified: behind a proxy
// that terminates TLS, use a Bearer verifier of what the proxy forwards
// instead. Rate limiters are kept per agent id in memory, at most
// Options.MaxCallers of them; each process limits on its own.
package auth
