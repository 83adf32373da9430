// Package telemetry makes what a Clutch router does visible in the
// OpenTelemetry backend an operator already runs: a span per task attempt
// and per tool call (the GenAI semantic conventions' invoke_agent and
// execute_tool), metrics through the OpenTelemetry metrics API, and
// log/slog records at the task lifecycle's edges. It depends on the
// OpenTelemetry API only: install an SDK and exporters in the host
// (examples/observability shows one); with none installed everything here
// costs next to nothing.
//
// # Basics
//
// Make a Telemetry, measure the store with it and give it to the router as
// its Observer:
//
//	tel, _ := telemetry.New(nil) // the global providers and slog.Default()
//	st := tel.WrapStore(bolt)
//	r, _ := router.New(st, reg, &router.Options{Validator: schemas, Observer: tel})
//
// It is a router.Observer rather than a router.Middleware because a
// middleware sees only the handler, while a task's span must also cover
// its routing, its wait in the queue, and a timeout or cancel that ends it
// while the handler still runs; the Observer hook is the router's one
// place for that.
//
// # Traces
//
// Each attempt of a task is a span "invoke_agent <agent>" (kind internal;
// the agent's display name, else its id) with gen_ai.operation.name,
// gen_ai.agent.id, gen_ai.agent.name (when the card has a display name),
// gen_ai.conversation.id (the thread) and the Clutch attributes
// clutch.task.id, clutch.run.id, clutch.task.parent_id,
// clutch.task.attempt, clutch.request.payload_type,
// clutch.result.payload_type, clutch.outcome (result, error, retry,
// timeout, cancel) and error.type (the protocol code). The routing
// decision is a span event clutch.routing.decision
// (clutch.routing.selected, clutch.routing.candidates,
// clutch.routing.reason, and clutch.queue.wait_ms when the attempt
// waited for capacity); no match is
// clutch.routing.failure. A failed or timed-out attempt has status Error; a
// cancelled one does not.
//
// A tool call — a tool.call event the handler stores (router.CallTool,
// Task.Emit; the MCP client does) up to the tool.result or tool.error
// with its call id (docs/protocol.md §2.3.1: call_id; details.call_id for
// a tool.error) — is a child span "execute_tool <name>" with
// gen_ai.operation.name, gen_ai.tool.name, gen_ai.tool.call.id (the call
// id; a tool.call stored before the rule has its event id), clutch.tool.server
// ("mcp:<server>") and, on failure, clutch.outcome error, error.type and
// status Error. A delegated subtask's attempts are children of
// the delegating attempt's span.
//
// Trace context follows the envelope (docs/protocol.md §1.1): trace_id and
// span_id are W3C ids. A request that carries them continues that trace,
// its span_id the parent of the task's spans; one without continues the
// span of the context it was submitted with (see Extract, Handler), else
// starts a new trace. Every event the router stores for an attempt carries
// the attempt's span (trace_id, span_id, parent_span_id), tool events
// their call's span, a delegated request the delegating attempt's span;
// the task.request itself keeps what its sender gave it (a signed request
// is never rewritten). A retry is a sibling of the first attempt under
// the same parent, or its child when the first attempt started the trace.
// The adapters propagate a task's trace as a W3C traceparent over A2A and
// MCP (header and _meta) and read it where requests come in.
//
// # HTTP surfaces
//
// A surface that submits tasks for HTTP callers continues their traces by
// serving through Handler (or calling Extract with the request's header):
// the request context then carries the caller's W3C span context, which a
// submitted task whose envelope has no trace ids of its own continues. A
// surface that streams events calls Subscribed for each subscriber. The
// gateway does both: it reads traceparent on every request, and counts its
// SSE, WebSocket and AG-UI streams when tel.Subscribed is its
// gateway.Options.Subscribers. The A2A and MCP servers read traceparent
// themselves (packages adapters/a2a and adapters/mcp).
//
// # Metrics
//
// Units follow the OpenTelemetry conventions (seconds, {task}); no
// attribute holds an id of a task, run, thread or call, and values taken
// from outside — error codes outside the protocol table, and past 4096
// distinct attribute sets, agent ids and event types — become _OTHER.
//
//	clutch.task.started             counter    {task}     gen_ai.agent.id
//	clutch.task.finished            counter    {task}     gen_ai.agent.id, clutch.outcome, error.type
//	clutch.task.duration            histogram  s          gen_ai.agent.id, clutch.outcome, error.type
//	clutch.task.queue.wait          histogram  s          (every routed or unrouted attempt; 0 when it did not wait)
//	clutch.task.active              updown     {task}     gen_ai.agent.id
//	clutch.task.queued              updown     {task}
//	clutch.routing.decisions        counter    {decision} clutch.routing.result (selected, failed), gen_ai.agent.id | error.type
//	clutch.tool.duration            histogram  s          clutch.tool.server, gen_ai.tool.name, clutch.outcome, error.type
//	clutch.store.append.duration    histogram  s          error.type on failure
//	clutch.store.append.batch_size  histogram  {event}
//	clutch.store.events             counter    {event}    clutch.event.type
//	clutch.stream.subscribers       updown     {subscriber} clutch.stream
//	clutch.store.bytes              gauge      By         (ObserveStore, below)
//	clutch.store.free_bytes         gauge      By
//	clutch.store.stored_events      gauge      {event}
//	clutch.store.oldest.age         gauge      s
//	clutch.store.compaction.age     gauge      s
//	clutch.store.backup.age         gauge      s
//
// Task counts are per attempt: started when an agent accepts it,
// finished when it ends (outcome retry when the task is tried again), so
// a task that fails routing is finished without having started. The
// number of tool calls is the count of clutch.tool.duration. The store
// metrics need the store wrapped by WrapStore; stream subscribers are
// counted by the surfaces that stream (Subscribed). The durations of
// attempts and tool calls and the queue wait are recorded in the
// attempt's context, so that an SDK keeping exemplars links them to its
// trace; the store metrics are recorded without it (an append measures
// the store, not the task that made it). The store gauges, from
// store.UsageOf, need ObserveStore and are read at each collection;
// what the store does not know, or what never happened, is not observed.
//
// # Logs
//
// Records go to Options.Logger with the stable keys task, run, agent,
// attempt and, on failure, code and error, plus trace_id and span_id of
// the attempt's span when it has one: "task accepted" and "task finished"
// at Debug; "task retried", "task timed out", "task cancelled", "task
// interrupted" (Shutdown, or Recover after a restart) and "tool call
// failed" at Warn; "task failed" at Error. The router logs a handler's
// panic itself; the attempt then fails with INTERNAL, logged here.
//
// # Errors
//
// New fails with ErrInvalidOptions when the meter provider refuses an
// instrument.
//
// # Caveats
//
// The envelope has no trace flags: a trace id that arrives in a request is
// taken as sampled. Spans of tool calls are bounded by the events: a call
// whose tool.result is never emitted ends with the task's attempt. A
// sampler sees a span's name, its parent and gen_ai.operation.name: the
// other attributes are set when the span ends (given at its start, the
// SDK would copy them again). The attribute slices given to a span's
// SetAttributes and AddEvent are reused once the call returns: a
// TracerProvider must copy what it keeps, as the SDK does.
package telemetry
