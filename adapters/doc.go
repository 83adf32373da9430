// Package adapters is the contract between Clutch and the outside
// protocols and frameworks it speaks with (docs/protocol.md §7). They come
// in two kinds:
//
//   - Translators turn the messages of another message language into
//     envelopes and back, with no network of their own: bytes in, bytes
//     out. Each implements [Adapter] (docs/protocol.md §7.2 in Go: a
//     name, whether it can translate an envelope outbound, inbound: the
//     outside bytes → one or more envelopes, outbound: envelope → bytes)
//     and is held by a [Registry]. Packages clowl (CLowl v0.2) and
//     multiagent (multiagent-1.0) are translators.
//   - Bridges connect the router to live peers: they dial servers, serve
//     HTTP, run sessions and record what crosses them as events of the
//     calling task. They do not implement Adapter; each has its own
//     client and server types. Packages mcp (Model Context Protocol) and
//     a2a (Agent2Agent 1.0) are bridges.
//
// # Basics
//
// A [Registry] holds translators and picks one: for raw input through the
// optional [Detector] upgrade (ForRaw, Inbound), for an envelope through
// Adapter.CanHandle (ForMessage, Outbound). Inbound messages carry
// meta.src ([MetaSource]) naming their protocol, so answers can go back the
// same way.
//
//	reg, _ := adapters.NewRegistry(clowl.New(nil), multiagent.New(nil))
//	msgs, a, err := reg.Inbound(ctx, raw)   // whichever adapter recognises raw
//	out, _, err := reg.Outbound(ctx, reply) // whichever adapter handles reply
//
// The envelopes a translator returns came from outside, whatever sender
// they name: hand them to the router with router.Router.Admit (or call
// router.Router.Verify before Submit), which applies the signature policy
// of docs/protocol.md §6.1. A message that claims a keyed agent as its
// sender, or that the policy says must be signed, is then refused unless
// it carries that agent's Clutch signature; the other formats carry none,
// so such agents must speak the envelope itself.
//
// # Writing a translator
//
// Start the package doc with the mapping table (their field → envelope
// field, and back), and say what each direction loses and where it is kept
// (usually meta). Inbound never panics, returns an [*Error] with a
// protocol.Code for bad input (InboundError), and returns only messages
// that pass protocol.Message.Validate. Run package adaptertest against the
// adapter with real payloads of the outside system.
//
// The package gives a translator its shared parts:
//
//   - [DecodeJSON] decodes outside input as strictly as the event store
//     reads envelopes (no duplicate names, valid UTF-8, bounded depth) and
//     [JSONError] turns a go-json-experiment/json error into an [*Error]
//     with the code and JSON pointer of the offending value.
//   - [CallID] gives a translated tool event its call id (docs/protocol.md
//     §2.3.1): the outside system's id of the call when it can be kept,
//     else a stable one derived from what names the call, the same for
//     the call and its outcome.
//   - [Links] links the outside protocol's message ids to the run, thread
//     and task each message landed in, so that a reply joins the task of
//     the message it answers and a task's events go out under the name
//     its request had. It keeps the links in an [Index]: in memory by
//     default ([NewMemoryIndex], the last [DefaultIndexSize] messages),
//     or one of the host's over the event store, which survives restarts.
//
// # Errors
//
// Adapter errors are [*Error]: the adapter, a protocol.Code (so
// errors.Is(err, protocol.CodeUnsupportedVersion) works and the error maps
// to a CLowl code and an HTTP status), the JSON pointer of the offending
// field and the cause; they also match ErrInbound or ErrOutbound. Their
// code is what protocol.CodeOf reads: the code of a *protocol.Error in the
// cause when there is one (the precise reason), else Code, and Code is
// always that same code (see [Error]); adaptertest holds adapters to it.
// A Registry that has no fitting adapter returns an error matching
// ErrNoAdapter.
package adapters
