// Package adapters is the contract between Clutch and the outside
// protocols and frameworks it speaks with (docs/protocol.md §7): MCP, A2A, CLowl,
// multiagent-1.0, LangGraph, AutoGen, crewAI. Each lives in a sub-package
// and implements [Adapter] — docs/protocol.md §7.2 in Go: a name, whether it can
// translate an envelope outbound, inbound (the outside protocol's bytes →
// one or more envelopes) and outbound (envelope → bytes).
//
// # Basics
//
// A [Registry] holds adapters and picks one: for raw input through the
// optional [Detector] upgrade (ForRaw, Inbound), for an envelope through
// Adapter.CanHandle (ForMessage, Outbound). Inbound messages carry
// meta.src ([MetaSource]) naming their protocol, so answers can go back the
// same way.
//
//	reg, _ := adapters.NewRegistry(clowl.New(nil), multiagent.New(nil))
//	msgs, a, err := reg.Inbound(ctx, raw)   // whichever adapter recognises raw
//	out, _, err := reg.Outbound(ctx, reply) // whichever adapter handles reply
//
// # Writing an adapter
//
// Start the package doc with the mapping table (their field → envelope
// field, and back), and say what each direction loses and where it is kept
// (usually meta). Inbound never panics, returns an [*Error] with a
// protocol.Code for bad input (InboundError), and returns only messages
// that pass protocol.Message.Validate. Run package adaptertest against the
// adapter with real payloads of the outside system.
//
// # Errors
//
// Adapter errors are [*Error]: the adapter, a protocol.Code (so
// errors.Is(err, protocol.CodeUnsupportedVersion) works and the error maps
// to a CLowl code and an HTTP status), the JSON pointer of the offending
// field and the cause; they also match ErrInbound or ErrOutbound.
// A Registry that has no fitting adapter returns an error matching
// ErrNoAdapter.
package adapters
