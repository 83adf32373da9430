// Package gateway is the HTTP API of a Clutch router (docs/protocol.md §9,
// §10 step 8): what a web UI, a CLI or another service needs to watch and
// drive a team of agents from outside the host process — the agents, the
// runs and threads, every event of a run, thread or task, task trees and
// routing decisions, submitting messages, artifacts, and live streams over
// Server-Sent Events and WebSocket.
//
// # Basics
//
// New builds the gateway of a router; it is an http.Handler the host mounts
// at the root of a server or under a prefix:
//
//	keys, _ := auth.APIKeys(map[string]auth.Caller{
//		os.Getenv("UI_KEY"): {AgentID: "agent:ui", Scopes: []string{auth.ScopeSubmit, auth.ScopeReadAll, auth.ScopeAgents}},
//	})
//	gw, err := gateway.New(r, &gateway.Options{
//		Auth: keys,
//		UI:   ui.Handler(nil),                                  // package gateway/ui: the web UI at "/"
//		AGUI: aguiHandler,                                     // package gateway/agui: agui.New(r, opts)
//	})
//	http.Handle("/clutch/", http.StripPrefix("/clutch", gw))
//
// The UI and AG-UI handlers are passed in, not built here, so that a host
// that wants neither links neither.
//
// Every /v1 request is authenticated and limited by package auth's Guard —
// the one authenticator, scopes and rate limits of every inbound surface.
// "Authorization: Bearer <key>" or "X-API-Key: <key>"; /v1/stream and
// /v1/ws also take ?access_token=<key>, because EventSource and browser
// WebSockets cannot set headers. A request that does not authenticate gets
// 401 and nothing else. GET /healthz answers "ok" to anyone and says
// nothing more.
//
// # Endpoints
//
// All JSON is UTF-8; times are RFC 3339 in UTC with milliseconds; seqs are
// the store's event seqs, JSON numbers.
//
//	GET  /v1/agents                    {"agents":[{"card","online","in_flight","success_rate"}]}
//	GET  /v1/store                     {"bytes","free_bytes","events","last_seq","oldest_seq","oldest_time","last_compaction","last_backup"}   read:all only (store.UsageOf; zero ones left out)
//	GET  /v1/runs?before=&limit=&system=    {"runs":[Summary],"next_before":SEQ|0}   newest first
//	GET  /v1/threads?before=&limit=&system= {"threads":[Summary],"next_before":SEQ|0}
//	GET  /v1/runs/{id}/events?after=&limit=&type=
//	GET  /v1/threads/{id}/events?...
//	GET  /v1/tasks/{id}/events?...     {"events":[{"seq","time","message"}],"next_after":SEQ|0}
//	GET  /v1/runs/{id}/decisions?...   the same, routing.decision and routing.failure only
//	GET  /v1/events/{id}               {"seq","time","message"}   one event, by message id or seq
//	GET  /v1/runs/{id}/tree            {"run_id","tasks":[TaskNode]}
//	GET  /v1/tasks/{id}/tree           the subtree of one task, the same shape
//	POST /v1/messages                  submit (below) → 202 Accepted
//	GET  /v1/questions?mine=1          {"questions":[WaitingQuestion]}   what waits for an answer
//	POST /v1/questions/{id}/answer     {"value": …} → 200 Answered   (below)
//	POST /v1/tasks/{id}/cancel         {"reason": "…"} or nothing → 200 Accepted (the task.cancel)
//	POST /v1/tasks/{id}/retry          nothing → 202 Accepted: a new attempt of a failed task
//	GET  /v1/artifacts/{ref}           the bytes, Content-Type its media type
//	GET  /v1/stream?run=&thread=&task=&agent=&type=&after=   SSE (after=now: only what comes next)
//	GET  /v1/ws?<the same>             WebSocket
//	     /v1/agui/...                  Options.AGUI, when set
//	     /v1/rules/...                 Options.Rules, when set (package rules/rulesapi)
//	GET  /healthz                      "ok"
//	GET  /, /ui/...                    Options.UI, when set
//
// Cancel and retry act on a task the caller may read (its own, or any
// with read:all); another caller's task is 404. Cancel stores the
// task.cancel with "cancelled by <caller>: <reason>"; retry runs a task
// that ended with task.error or task.timeout again as a new attempt
// (router.Router.Retry). Cancelling an ended task, and retrying a task
// that runs, completed or was cancelled, is 409 CONFLICT. Every 409 of
// this API (an ended task, an answered question, another caller's
// message id) says retryable false: sending it again does not help.
//
// Every body of the API is strict: a member the endpoint does not define
// is refused with 400 UNKNOWN_FIELD naming it (ErrUnknownField), never
// ignored, and a member of the wrong type is 400 INVALID_FIELD.
//
// A Summary is store.Summary with the API's time format: {"id", "run_id",
// "owner", "channel", "title", "first_seq", "last_seq", "created",
// "updated", "events", "bytes", "tasks", "ended", "waiting", "status",
// "agents", "agents_more", "failure": {"task_id", "agent_id", "code",
// "message"}},
// channel, title, waiting, agents, agents_more and failure left out when
// empty (docs/protocol.md §8.1 has the rules). An event's
// "message" is the envelope exactly as stored (the bytes the store holds);
// events pages hold up to limit events (DefaultPageLimit, at most
// MaxPageLimit) and up to MaxPageBytes of them (a page of big events ends
// early), and next_after is the seq to pass as after= for the next page, 0
// when there is none right now. Lists hold up to limit summaries
// (DefaultListLimit, at most MaxListLimit); next_before is the before= of
// the next page, 0 at the end. A TaskNode is {"task_id", "parent_task_id",
// "agent_id", "status" (pending, running, completed, failed, cancelled,
// timed_out), "state" (the last lifecycle event's type), "attempts",
// "payload_type", "started", "ended", "error", "children"}, rebuilt from the
// log by router.Replay. GET /v1/events/{id} answers one event in the
// shape of a page's: {id} is its message id or, when it is a decimal
// number, its seq; the caller gets it when it may read the event's run,
// thread or task (what an events page of one of them would show), and
// 404 otherwise, the same as for an event that does not exist. Unknown query parameters, and a parameter given
// twice, are refused with 400.
//
// # Submitting
//
// POST /v1/messages takes a Submission: "type" is task.request,
// chat.message or task.cancel; run_id, thread_id, task_id, parent_task_id,
// to, payload_type, payload, requires, prefers, domain, meta and
// idempotency_key are optional (see DecodeSubmission). The sender is the
// authenticated caller, always: a body with "from" is refused (400).
//
//   - task.request goes through router.Submit: validated against its
//     payload type, stored and routed. With an idempotency_key and no
//     run_id its run is auth.Deriver.RunID(caller, "gateway", key), so posting
//     it again answers with the first task (Accepted.Duplicate).
//   - chat.message is validated (the router's Validator, when it has one)
//     and appended.
//   - task.cancel cancels the running task task_id and its subtree; the
//     task.cancel event names the caller. Its body is
//     {"type": "task.cancel", "task_id": "…", "payload": {"message": "…"}}
//     (CancelPayload; payload optional): the reason goes in
//     payload.message and is stored as "cancelled by <caller>: <reason>",
//     as POST /v1/tasks/{id}/cancel {"reason": "…"} does. Any other member,
//     in the body or in the payload (a "reason" among them), is refused
//     with UNKNOWN_FIELD. A task that has ended gives 409 CONFLICT,
//     retryable false.
//
// The answer is 202 with an Accepted: the stored message's id and seq and
// its run, thread and task (for a cancel, the task's terminal event).
//
// # Answering
//
// A task that asks (router.Task.Ask, docs/protocol.md §2.7) waits for an
// answer. GET /v1/questions lists the questions this gateway's router
// waits on that the caller may answer (the question's "who": by default
// the task's requester) or may read the task of, oldest first, each with
// may_answer; ?mine=1 keeps those it may answer. POST
// /v1/questions/{id}/answer {"value": <JSON>} answers as the caller: the
// answer is stored from the caller's agent id and the task runs on (200
// Answered). A value that does not fit the question is 400; a question
// the caller may see but not answer is 403; one it may neither see nor
// answer, or that waits for nothing, is 404, the same as one that does not
// exist; an answer to an answered question, or after the task ended, is
// 409.
//
// # Scopes
//
// The rules are package auth's, applied as the A2A server applies them:
// reading needs auth.ScopeSubmit (a caller's own runs) or
// auth.ScopeReadAll (everybody's); listing agents needs auth.ScopeAgents;
// submitting needs auth.ScopeSubmit. A caller without read:all sees only
// what it started: a run or thread whose first event it sent, a task whose
// task.request it sent or that belongs to a run it started. Lists show it
// only its own runs and threads (Summary.Owner). The reserved system runs
// and threads (protocol.Reserved: the registry's, the rules library's;
// docs/protocol.md §6.7) are left out of the lists for everybody, admins
// too; an admin lists them with ?system=1 (for any other caller system=1
// changes nothing: it never sees them). Anything else — reading
// it, streaming it, posting into it, cancelling it — is answered 404, as
// if it did not exist. An artifact ref is a content address: whoever may
// read and knows a ref gets its bytes; they are served with a sandboxing
// Content-Security-Policy so they never run as a page of the gateway.
//
// # Live streams
//
// GET /v1/stream is Server-Sent Events, one per stored event:
//
//	id: <seq>
//	event: <message type>
//	data: {"seq":12,"time":"...","message":{...}}
//
// filtered by run, thread, task, agent (from.agent_id) and type (a prefix),
// AND-ed. It starts after the seq of after= or of the Last-Event-ID header
// (which wins: it is what a reconnecting EventSource sends), and yields
// every matching event after it exactly once, in seq order — the stored
// backlog first, then each new event as it is appended — so a client that
// resumes from the last id it saw misses nothing and sees nothing twice. A
// caller without read:all streams a run, thread or task it may see (404
// otherwise) or, without those filters, the events of the runs it may see.
// A ": ping" comment goes out every Options.Heartbeat.
//
// GET /v1/ws is the same stream over a WebSocket: one text frame per
// event, holding the SSE data object; resume with after=. The server sends
// pings every Options.Heartbeat; a client message closes the connection.
//
// Each stream is a Follow of the store, so all of them (and every other
// follower of the store in the process) share the store's one follower
// (docs/protocol.md §8.1): an append wakes one goroutine, which hands the
// event to the streams whose filters it matches, so what a writer pays for
// an append does not grow with the number of open streams. Each stream takes its events at its client's
// pace through a buffer of Options.StreamBuffer events: a slow client
// costs no more memory and holds up nobody else — neither the writer nor
// the other streams. A stream that falls behind the shared follower reads
// the store from its last seq until it has caught up, so it still misses
// nothing and repeats nothing. A client that takes nothing for
// Options.SlowTimeout while its buffer is full is cut off: SSE sends
//
//	event: clutch.closed
//	data: {"code":"CAPACITY","message":"slow consumer: ...","retryable":true}
//
// and ends the response; a WebSocket is closed with status 1013 (try again
// later) and that message. Either way the client resumes from the last seq
// it got.
//
// # Observability
//
// A request with a W3C "traceparent" header (and "tracestate") carries the
// caller's trace context into its handling (telemetry.Extract): a
// task.request it submits — through POST /v1/messages or AG-UI — whose
// envelope has no trace ids of its own continues the caller's trace, so
// with package telemetry as the router's Observer the task's invoke_agent
// span is a child of the caller's span. Options.Subscribers is told of each
// live stream as it starts and ends: "sse" and "ws" once the stream is
// accepted (a refused one is not counted), "agui" for as long as a request
// to the AG-UI handler lasts. (*telemetry.Telemetry).Subscribed fits it and
// counts them as clutch.stream.subscribers.
//
// # Errors
//
// Every error answer has the body
//
//	{"error":{"code":"VALIDATION","message":"...","retryable":false,"details":{...}}}
//
// with a code of the protocol error table and the HTTP status that table
// (through auth.Status) gives it: 400 for a malformed request, 401 without
// valid credentials (with a WWW-Authenticate challenge; the message is "no
// API key given (set --key or CLUTCH_API_KEY, or send Authorization:
// Bearer KEY)" when the request has no key and "API key not accepted"
// when it has one that is not — the same for every wrong key), 403 when the
// caller's scopes do not allow the call, 404 for what does not exist or
// may not be seen, 409 for a cancel of an ended task, 413 for a body over
// Options.MaxBodyBytes, 429 and 503 with Retry-After from the limits, 500
// INTERNAL for anything unexpected — logged to Options.Logger, never
// described to the client. The message says what is wrong in words,
// without Go package prefixes or HTML escapes (no JSON of the API is
// HTML-escaped); a payload that breaks its schema (422 VALIDATION) lists
// its violations in details: {"violations": [{"path", "keyword",
// "message"}]}. The package's sentinels (ErrBadRequest,
// ErrNotFound, ErrTooLarge, ErrSlowConsumer, ErrInvalidOptions) carry those
// codes.
//
// # CORS
//
// Off by default: no CORS headers, so browsers allow only pages of the
// gateway's own origin to call it. Options.CORS lists the other origins
// allowed (never "*"); WebSocket upgrades are checked against the same
// list.
//
// # Caveats
//
// Delivering an event is still work for each stream that gets it (its
// filter, its write to the client), done by the streams' own goroutines,
// not the writer's. A caller without
// read:all has its run and thread lists filtered by owner; a page of such
// a list reads at most 10000 summaries, so it may hold fewer than limit
// entries with a non-zero next_before: go on from there. An SSE stream
// starts with "retry: 2000" (reconnect after 2 s). The access_token query
// parameter puts a key in a URL, where proxies may log it: prefer headers
// (fetch-based SSE clients can set them).
//
// # Dependencies
//
// github.com/coder/websocket (named by the project for the WebSocket
// stream) and github.com/go-json-experiment/json (the module's strict JSON
// decoder) for the submit body. Package telemetry, for its W3C trace
// context reader, brings the OpenTelemetry API (no SDK, no exporter).
package gateway
