// Package traceparent maps the envelope's trace ids (protocol.Trace,
// docs/protocol.md §1.1) to and from the W3C Trace Context "traceparent"
// value — "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>" — so that
// the adapters that cross a process boundary (A2A, MCP, the gateway) carry
// a task's trace without depending on OpenTelemetry.
//
// # Basics
//
// Format gives the value to send for a trace (its trace_id and span_id);
// Parse reads a received value into a Trace whose span_id is the caller's
// span, the parent of what the receiver does. A malformed value is ignored
// (Parse reports false), as the W3C specification asks of receivers.
//
// # Caveats
//
// A protocol.Trace has no trace flags: Format always sends the sampled
// flag (01), and Parse drops the flags it reads. A receiver that samples
// by its parent therefore records what a Clutch process forwards.
package traceparent
