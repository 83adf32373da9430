// Package clutch is the start of the tour of Clutch, an embeddable Go SDK
// that puts a whole multi-agent orchestration layer inside the host
// application's binary. Clutch implements Clutch Protocol v0 ("clutch/0.1"):
// one envelope for every message, an append-only event store, an agent
// registry, a payload schema registry, a router with explainable capability
// routing, and adapters that bring outside protocols into the envelope. The
// protocol is specified in docs/protocol.md in the repository; code comments
// cite its sections as "docs/protocol.md §N".
//
// This package holds no code; it is the map. Meet the packages in this
// order:
//
//  1. [github.com/clutchprotocol/clutch/protocol] — the envelope (Message),
//     AgentCard and Capability, the 17 message types, ids, strict
//     Encode/Decode, Validate, the error code table, Ed25519 signing. Every
//     other package speaks it.
//  2. [github.com/clutchprotocol/clutch/store] — the append-only event store
//     contract: Append with dedup, ordered reads by run, thread, task and
//     agent, live tail, artifacts. store/memstore is the in-memory double for
//     unit tests; store/boltstore (embedded bbolt) is the default;
//     store/storetest certifies any backend.
//  3. [github.com/clutchprotocol/clutch/schema] — payload_type → JSON Schema
//     registry, Go-type reflection, the built-in payload types of docs/protocol.md
//     §3.3, and workflow-scoped validation (§3.4).
//  4. [github.com/clutchprotocol/clutch/registry] — the agent registry:
//     AgentCards, heartbeats and liveness, load and success tracking,
//     event-sourced from the store.
//  5. [github.com/clutchprotocol/clutch/router] — the heart: requests and
//     results are validated against their payload types, tasks are routed
//     by requires/prefers with a recorded routing.decision, run by
//     in-process handlers, retried, timed out, cancelled, delegated; every
//     lifecycle step is an event. router/routertest makes unit tests of
//     agents a few lines long.
//  6. [github.com/clutchprotocol/clutch/adapters] — the outside world.
//     Translators implement the Adapter contract: adapters/clowl and
//     adapters/multiagent turn CLowl v0.2 and multiagent-1.0 messages into
//     envelopes and back. Bridges connect the router to live peers:
//     adapters/mcp calls tools on MCP servers and lets MCP hosts join a
//     team; adapters/a2a serves agents over A2A and calls remote A2A agents.
//  7. [github.com/clutchprotocol/clutch/auth] and
//     [github.com/clutchprotocol/clutch/egress] — the edges: every inbound
//     surface authenticates its callers, scopes what they see and limits
//     them through auth; every outbound connection dials through one
//     egress policy. Signatures on envelopes from outside are enforced by
//     the registry's policy at the router's ingress (docs/protocol.md §6).
//
// Dependencies point one way: protocol ← store ← registry, schema ← router
// ← adapters ← examples; auth and egress depend on protocol only. The examples folder holds runnable tutorials;
// start with
//
//	go run ./examples/quickstart
package clutch
