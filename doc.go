// Package clutch is the start of the tour of Clutch, an embeddable Go SDK
// that puts a whole multi-agent orchestration layer inside the host
// application's binary. Clutch implements Clutch Protocol v0 ("clutch/0.1"):
// one envelope for every message, an append-only event store, an agent
// registry, a payload schema registry, a router with explainable capability
// routing, adapters that bring outside protocols into the envelope, and a
// gateway with a live web UI and a CLI that let a person watch it all. The
// protocol is specified in docs/protocol.md in the repository; code comments
// cite its sections as "docs/protocol.md §N".
//
// This package holds no code; it is the map. Meet the packages in this
// order.
//
// # The core
//
//  1. [github.com/clutchprotocol/clutch/protocol] — the envelope (Message),
//     AgentCard and Capability, the 19 message types, ids, strict
//     Encode/Decode, Validate, the error codes, Ed25519 signing. Every
//     other package speaks it; it imports no other package of the module.
//  2. [github.com/clutchprotocol/clutch/store] — the append-only event store
//     contract: Append with dedup, ordered reads by run, thread, task and
//     agent, live tail, artifacts, and the run and thread summaries a UI
//     lists. Its backends:
//     [github.com/clutchprotocol/clutch/store/memstore], the plain in-memory
//     double for unit tests;
//     [github.com/clutchprotocol/clutch/store/boltstore], embedded bbolt,
//     the default; [github.com/clutchprotocol/clutch/store/pgstore],
//     PostgreSQL for a team spread over many processes. A store of your own
//     is built with [github.com/clutchprotocol/clutch/store/driver] and
//     certified by [github.com/clutchprotocol/clutch/store/storetest]. A log
//     that runs for years is kept in bounds by
//     [github.com/clutchprotocol/clutch/store/retention]: ended runs past an
//     age or a count are archived, removed and tombstoned.
//  3. [github.com/clutchprotocol/clutch/schema] — payload_type → JSON Schema
//     registry, Go-type reflection, the built-in payload types of
//     docs/protocol.md §3.3, and workflow-scoped validation (§3.4). A router
//     uses it through its Validator option; a router without schemas links
//     no JSON Schema library.
//  4. [github.com/clutchprotocol/clutch/registry] — the agent registry:
//     AgentCards, heartbeats and liveness, load and success tracking,
//     event-sourced from the store; heartbeats are kept as current state
//     (store.Presence), and only changes are events.
//  5. [github.com/clutchprotocol/clutch/router] — the heart: tasks are
//     routed by requires/prefers with a recorded routing.decision, run by
//     in-process handlers, retried, timed out, cancelled, delegated; every
//     lifecycle step is an event.
//     [github.com/clutchprotocol/clutch/router/routertest] makes unit tests
//     of agents a few lines long, and
//     [github.com/clutchprotocol/clutch/router/team] lets routers in several
//     processes share one store as one team.
//  6. [github.com/clutchprotocol/clutch/telemetry] — OpenTelemetry spans,
//     metrics and logs for a router, as router middleware (the API only,
//     never an exporter).
//
// # The outside world
//
//  7. [github.com/clutchprotocol/clutch/adapters] — the Adapter contract
//     that translators implement, a registry of them and their shared
//     parts; [github.com/clutchprotocol/clutch/adapters/adaptertest] checks
//     any adapter. Translators of message languages and framework streams:
//     [github.com/clutchprotocol/clutch/adapters/clowl] (CLowl v0.2),
//     [github.com/clutchprotocol/clutch/adapters/multiagent]
//     (multiagent-1.0), [github.com/clutchprotocol/clutch/adapters/langgraph],
//     [github.com/clutchprotocol/clutch/adapters/autogen],
//     [github.com/clutchprotocol/clutch/adapters/crewai] and
//     [github.com/clutchprotocol/clutch/adapters/webhook] (Standard Webhooks
//     in and out). Bridges connect the router to live peers:
//     [github.com/clutchprotocol/clutch/adapters/mcp] calls tools on MCP
//     servers and lets MCP hosts join a team;
//     [github.com/clutchprotocol/clutch/adapters/a2a] serves agents over A2A
//     and calls remote A2A agents; the LangGraph and crewAI packages run a
//     graph or a crew deployed elsewhere as a Clutch agent. Go agent
//     frameworks join in the same binary through modules of their own, so
//     that their dependencies stay out of this one:
//     github.com/clutchprotocol/clutch/adapters/eino,
//     github.com/clutchprotocol/clutch/adapters/genkit and
//     github.com/clutchprotocol/clutch/adapters/langchaingo make an eino
//     graph, a Genkit flow or a LangChainGo agent a Clutch agent, and the
//     team their tool (examples/gofw).
//  8. [github.com/clutchprotocol/clutch/rules] — a team's rules, workflows
//     and context documents for agents, kept as events, with review and
//     attestation; [github.com/clutchprotocol/clutch/rules/rulesmcp] serves
//     them to MCP hosts and [github.com/clutchprotocol/clutch/rules/rulesapi]
//     over HTTP for review.
//  9. [github.com/clutchprotocol/clutch/auth] and
//     [github.com/clutchprotocol/clutch/egress] — the edges: every inbound
//     surface authenticates its callers, scopes what they see and limits
//     them through auth; every outbound connection dials through one
//     egress policy.
//
// # Watching it
//
//  10. [github.com/clutchprotocol/clutch/gateway] — the HTTP/WebSocket
//     gateway a host mounts in its own server: the /v1 JSON API, live
//     streams, submissions stamped with the caller;
//     [github.com/clutchprotocol/clutch/gateway/ui] is the web UI it serves
//     and [github.com/clutchprotocol/clutch/gateway/agui] streams runs to
//     AG-UI front ends.
//  11. [github.com/clutchprotocol/clutch/cmd/clutch] — the clutch CLI:
//     serve the gateway and the UI, and list, tail, inspect, replay, export
//     and check a store, on a file or through the gateway.
//
// # Options
//
// Every constructor takes its required arguments first and an *Options
// last; nil means the defaults. A zero field takes the default its comment
// states. A negative size, count or duration means "none" (no heartbeats,
// no redirects, no rejoins) where the field's comment says so, and is
// refused with the package's ErrInvalidOptions, naming the field,
// wherever none makes no sense. A limit is never lifted by a negative
// value: one that can be lifted says how (router.NoLimit). One clock serves a store, its
// registry and their router: the store's Options.Clock, which the
// registry and the router read unless given an IDs of their own.
//
// Dependencies point one way: protocol ← store ← registry, schema ← router
// ← telemetry, rules, adapters, gateway ← cmd, examples; auth and egress
// depend on protocol only. The examples folder holds runnable tutorials;
// start with
//
//	go run ./examples/quickstart
package clutch
