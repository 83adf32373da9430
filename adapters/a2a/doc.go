// Package a2a connects Clutch to the Agent2Agent protocol (A2A 1.0): docs/protocol.md
// calls A2A the adapter "for external agent communication", and docs/protocol.md
// §13.2 asks for a simple HTTP surface next to it. It is built on the
// official Go SDK, github.com/a2aproject/a2a-go/v2 (a2a, a2asrv,
// a2aclient), JSON-RPC binding.
//
// Two directions:
//
//   - Serving (inbound): [Server] is an http.Handler that exposes the
//     agents of a router over A2A — agent cards, SendMessage,
//     SendStreamingMessage, GetTask, CancelTask, SubscribeToTask,
//     ListTasks — and over the simple surface of docs/protocol.md §13 (GET /agents,
//     POST /agents/{name}/run, SSE stream).
//   - Calling out (outbound): [Register] resolves a remote A2A agent's
//     card, maps it to a Clutch AgentCard and registers the agent with a
//     router, whose tasks [Remote.Handle] then forwards over A2A.
//
// This package is a bridge, not a translator (see package adapters): it
// serves and calls live A2A agents over HTTP, so it has no
// adapters.Adapter; its [Server], [Register] and [Remote] are what a host
// wires to the router.
//
// # Mapping
//
// Identifiers and content, A2A ↔ Clutch envelope:
//
//	A2A                              Clutch
//	contextId                        thread_id derived from the caller and the contextId
//	                                   (meta.a2a_context_id keeps the contextId; a new one
//	                                   when absent), so contexts are per caller (§6.7)
//	task id                          task_id (the Clutch task's id, "task_01…")
//	message.messageId                meta.a2a_message_id of the task.request
//	text parts                       payload a2a.content.v1 {"text": parts joined by "\n", …}
//	data parts                       … "data": [values in order]} (Content)
//	one data part with metadata      a typed payload: payload_type from the metadata,
//	  clutch.payload_type              payload = the data
//	raw (file bytes) parts           attachments {kind: artifact_ref} (bytes in the artifact store)
//	url parts                        attachments {kind: url}
//	metadata clutch.requires,        requires[], prefers[], domain (team endpoint routing)
//	  clutch.prefers, clutch.domain
//	Task.metadata clutch.run_id,     run_id, the agent that accepted the task
//	  clutch.agent_id
//
// Lifecycle, Clutch event → A2A task state and stream event:
//
//	task.request                     Task, SUBMITTED (the first event of a stream)
//	task.accept                      status WORKING
//	task.progress                    status WORKING, message: a text summary, then the
//	                                   payload as a data part (clutch.kind "progress")
//	task.error with will_retry       status WORKING, message: the error
//	task.result                      artifact "result": a text summary, then the payload
//	                                   as a data part (clutch.payload_type) — a Content
//	                                   payload as its own text and data parts — then
//	                                   status COMPLETED
//	task.question                    status INPUT_REQUIRED (the task waits, docs/protocol.md
//	                                   §2.7), message: the question's text, then the
//	                                   protocol.Question as a data part (clutch.kind
//	                                   "question"); the caller's next message on the
//	                                   task answers it (one data part: the value; text
//	                                   parts: a string) and the same task runs on
//	task.answer                      status WORKING; the answer joins the history
//	task.error                       status FAILED, message: text and the §5.4 error
//	                                   as a data part (clutch.kind "error"); an INTERNAL
//	                                   error says "internal error" only (the log keeps it)
//	task.timeout                     status FAILED with the TIMEOUT error
//	task.cancel                      status CANCELED
//	routing.*, tool.*, other events  nothing (they stay in the Clutch log)
//
// A handler asks for input with router.Task.Ask (docs/protocol.md §2.7):
// that is the one way a task waits for its client. INPUT_REQUIRED is then
// an interrupted state, not an end (A2A 1.0 §3.4.3): the client's next
// message with the task's taskId answers the question and the same task
// goes on; CancelTask cancels it; SubscribeToTask gives the Task as it is
// (and ends, as every stream ends when its task stops for input). A
// handler that returns router.Fail(protocol.CodeInputRequired, ...) has
// ended its task: it is FAILED, its error's code INPUT_REQUIRED, and
// takes no more messages. The Server does not turn that error into a
// question: the handler would run again without a way to read the answer
// and fail the same way.
//
// A message with the taskId of a task that is running, not waiting for an
// answer, is UnsupportedOperationError (A2A 1.0 lets an agent take such
// follow-ups; a Clutch task does not): a handler receives its input once,
// when it starts, and a task has no inbox to read more from while it
// runs. A task that needs more from its client asks.
//
// Outbound, the remote agent's answer maps back: status WORKING →
// task.progress (the Clutch progress payload when the message carries one,
// else a [RemoteProgress]); COMPLETED → task.result whose payload is the
// first data part with a recognised clutch.payload_type (see
// RemoteOptions.Schemas), else a [Content] of the text and data parts
// without payload_type; raw parts go to the artifact store, url parts to
// attachments; a bare Message answer likewise. FAILED → task.error with the
// Clutch §5.4 error the status message carries (a Clutch server behind
// A2A), else TOOL_FAILED; INPUT_REQUIRED → a task.question of the
// forwarded task (see Calling out); AUTH_REQUIRED → UNAUTHORIZED; REJECTED → UNSUPPORTED_TASK; CANCELED → CANCELLED. A
// skill becomes the capability "skill:<id>" (an id already of the form
// <kind>:<name> is kept, so a Clutch card served by Server maps back to
// itself), and the first JSON-RPC interface becomes endpoints.a2a.url.
//
// # Serving
//
//	keys, err := auth.APIKeys(map[string]auth.Caller{
//		os.Getenv("UI_KEY"): {AgentID: "agent:ui", Scopes: []string{auth.ScopeSubmit, auth.ScopeAgents}},
//	})
//	srv, err := a2a.NewServer(r, &a2a.ServerOptions{
//		Auth:   keys,                      // required: no anonymous default
//		Expose: []string{"agent:ken"},     // required: only these are served
//		Limits: &auth.Options{Rate: 5, Burst: 20, MaxInFlight: 256},
//	})
//	http.ListenAndServe("127.0.0.1:8080", srv)
//
// # Identity, tenancy and limits
//
// Every path but the agent cards goes through ServerOptions.Auth (package
// auth: API keys, bearer tokens checked by a verifier hook, TLS client
// certificates, a chain of them, or auth.Anonymous as the explicit opt-in
// to anonymous callers); NewServer refuses a nil one. A request that does
// not authenticate gets 401 with a WWW-Authenticate challenge and no data.
// The cards are public — a client reads one to learn how to call — list
// only the exposed agents, and declare the credentials Auth takes
// (auth.Credentials): "bearer" (HTTP Bearer) and "apiKey" (the X-API-Key
// header) for auth.APIKeys, "bearer" for auth.Bearer, "mtls" for
// auth.ClientCerts, the members' for auth.Chain, any one of them
// required; nothing for auth.Anonymous, and none required when a chain
// admits anonymous callers. An authenticator that does not say is
// declared as bearer.
//
// The caller's agent id is the from.agent_id of every task.request it
// submits; nothing in a message can claim another. A caller reads,
// streams, lists, cancels and continues only its own tasks (another's is
// TaskNotFoundError, as if it did not exist) unless it holds
// auth.ScopeReadAll. Submitting takes auth.ScopeSubmit (else JSON-RPC
// permission denied, 403 on the simple surface); GET /agents and
// /agents/{name} take auth.ScopeAgents (403).
//
// Exposure is opt-in: ServerOptions.Expose names the agents served. A
// message to the team endpoint is addressed to the exposed agents ("to"),
// so routing — requires or not — never reaches another agent of the
// router; an agent's endpoint addresses that agent. Remote A2A agents
// registered with Register are agents like any other: unexposed, they are
// unreachable here, and their RemoteOptions.BearerToken is only ever sent
// to the remote, never accepted from or shown to callers of this Server.
//
// Limits (auth.Options): a token bucket per caller (429 RATE_LIMITED with
// Retry-After) and a bound on requests in flight (503 CAPACITY with
// Retry-After, at once: requests never queue in the Server). A router
// admission refusal (CAPACITY) is 503 with Retry-After on the simple
// surface and a JSON-RPC server error (-32000, "at capacity") on A2A.
// At most ServerOptions.MaxRunning tasks submitted here are followed for
// CancelTask; past it a send is refused the same way.
//
// A client that goes away from a blocking call (SendMessage without
// returnImmediately, POST /run) cancels its task: nobody waits for the
// outcome, so it does not stay queued or running. A stream whose client
// goes away detaches: the task goes on, and GetTask or SubscribeToTask
// find it.
//
// Retries are deduplicated per caller: a messageId is the task.request's
// idempotency_key, and its run_id is derived from the caller, the endpoint
// and the messageId (auth.Deriver.RunID, keyed with the store's secret), so the same message sent again is
// answered with the task the first started, and runs once
// (docs/protocol.md §5.2). On the simple surface the Idempotency-Key
// header does the same for /run and /stream.
//
// Outside input is checked before it is used: a JSON-RPC body must be
// valid JSON under RFC 7493 (a duplicate object key, invalid UTF-8 or a
// lone surrogate is ParseError, never "last wins" or U+FFFD), and
// messageId, contextId, taskId and sessionId must be at most 256 bytes
// without control characters. A message needs its messageId and role
// (ROLE_USER); historyLength is at least 0, pageSize 1 to 100 when
// present, status one of the task states, statusTimestampAfter an RFC
// 3339 timestamp: anything else is InvalidParamsError (-32602) naming the
// member. The members of GetTask, ListTasks, CancelTask and
// SubscribeToTask are checked for their form before the SDK decodes them,
// since it takes pageSize 0 for an absent one and answers a value of the
// wrong form as a parse error.
//
// Paths, relative to the Server's base:
//
//	GET  /.well-known/agent-card.json          the team card: every exposed agent's
//	                                             capabilities as skills
//	POST /a2a                                   the team's JSON-RPC endpoint, routed by
//	                                             capability (clutch.requires, ...)
//	GET  /agents/{name}/.well-known/agent-card.json   one agent's card
//	POST /agents/{name}/a2a                     its JSON-RPC endpoint (tasks go to it)
//	GET  /agents                                docs/protocol.md §13: {"agents": [{name, agent_id,
//	                                             description, capabilities, online, url}]}
//	GET  /agents/{name}                         one agent, with its Clutch card
//	POST /agents/{name}/run                     {"prompt", "sessionId"?} → {"result", "meta"}
//	GET|POST /agents/{name}/stream              SSE: "event: state" per step, then
//	                                             "event: result" (or "event: error")
//
// {name} is the agent id without "agent:". The streaming capability is
// declared only while streaming is enabled; push notifications and the
// extended card are not built: their methods answer
// PushNotificationNotSupportedError and UnsupportedOperationError (A2A
// 1.0 §3.3.4: a card that declares no extended card), and the cards do
// not claim them. Method names are A2A 1.0's
// (SendMessage, ...); an A2A 0.3 request (message/send) gets
// MethodNotFoundError, and an A2A-Version header other than 1.x gets
// VersionNotSupportedError (a request without the header is served as
// 1.0, as the official SDKs do, though the spec reads it as 0.3).
//
// SendMessage waits until the task ends or stops for input unless
// configuration.returnImmediately is set. Streams carry every event listed
// above, in store order, and end with the task; SubscribeToTask starts
// with the Task as it is. Tasks live in the Clutch store: GetTask,
// ListTasks and SubscribeToTask read the events, so they answer for tasks
// of an earlier process over the same store (after a restart, call
// Router.Recover so tasks that were running end as INTERRUPTED). Only tasks
// that entered through A2A (meta.src "a2a/1.0") are visible, only to their
// caller, and an agent's endpoint sees only the tasks addressed to it.
//
// ListTasks lists by status timestamp, newest first, pageSize (1-100,
// default 50) tasks a page, and totalSize counts every task the filters
// match (A2A 1.0 §3.1.4). Sorting and counting take every matching task:
// a page reads each task of the caller from the store (through the
// from.agent_id index, the thread_id index with a contextId, the whole
// log for a caller with ScopeReadAll), so its cost grows with the
// caller's history; a list of more than 100000 tasks is refused with a
// server error (-32000) asking for a contextId. The page token names the
// last task of the page: the next page starts after it, whatever came in
// meanwhile.
//
// The simple surface sends the prompt as a Content payload ({"text":
// prompt}, payload_type a2a.content.v1) to the named agent; sessionId names
// the caller's context as contextId does. {"result"} is the result payload as the agent returned it;
// "meta" holds task_id, run_id, sessionId, agent_id, payload_type, attempt
// and duration_ms.
//
// # Calling out
//
//	rm, err := a2a.Register(ctx, r, "https://agent.example.com", &a2a.RemoteOptions{BearerToken: tok})
//	defer rm.Close()
//
// Forwarding streams when the card declares streaming (else SendMessage,
// then GetTask polling while the task runs). A stream that drops before
// the task ends is re-attached with SubscribeToTask (whose first event,
// the Task as it is, is taken as the truth) up to MaxResubscribes times,
// then followed by polling GetTask. The contextId of a request is its
// thread_id, or the contextId the agent gave that thread. Cancelling the
// Clutch task, or its passing max_runtime_sec (DefaultMaxRuntimeSec unless
// RemoteOptions.Limits says otherwise), cancels the remote task.
//
// A remote task that stops in INPUT_REQUIRED makes the forwarded task ask
// its requester (router.Task.Ask, docs/protocol.md §2.7) and wait,
// holding no goroutine: the question's text is the status message's text,
// its kind and choices those of the Clutch question the message carries
// when the remote is a Clutch Server, and its Details name the remote
// task — remote (the Remote's URL), a2a_task_id, a2a_context_id,
// a2a_state and a2a_status_message_id (the id of the status message that
// asked). The question is stored with the task, so it outlives the
// process. When it is answered the router runs Handle again; it calls
// router.Task.Resumed first and, finding its question answered, reads the
// remote task (GetTask): still waiting on that status message, it sends
// the answer as a message on the task (messageId "clutch-answer-" and
// the question id; a JSON string as a text part, another value as one
// data part, as a Server reads an answer) and follows the task as a sent
// request; waiting on another message, an earlier run's answer was taken
// and the remote asked again: that question is asked; running or ended,
// the task is followed to its end without sending again — so an answer
// sent by a run whose process died before storing the outcome is not sent
// twice. An answer the agent refuses as invalid (a Server checks the
// JSON Schema of its question, which the forwarded question does not
// carry) leaves its task waiting: the task asks again, the question's
// text saying why. A question naming another remote's task fails with
// CONFLICT. A
// subtask cannot ask: the remote's INPUT_REQUIRED ends it with that error
// and the same details, for the task that delegated it; nothing answers
// that remote task later. A new request in the thread starts a new remote
// task: the answer is the one way to continue a waiting one.
//
// Cancelling a waiting task, or its question's deadline, ends it in
// Clutch only: no handler runs then, so the remote task stays in
// INPUT_REQUIRED. A remote agent whose status messages have no messageId
// cannot tell its new question from the old one: after a crash between
// sending an answer and storing the outcome, such a task waiting again
// gets the old answer again.
//
// Every connection a Remote makes — to the card's URL and to the
// interfaces the card lists, which are outside input — is dialled through
// RemoteOptions.Egress (package egress, docs/protocol.md §6), checked on
// the address the name resolves to at every dial and redirect, proxies
// off. The default policy allows public addresses only: an agent on
// 127.0.0.1 or a private network needs an IP or CIDR rule. The mapped
// card's security.network (RemoteOptions.Security; "open" when none is
// given) is enforced: "egress-restricted" dials only what the allow rules
// match, "none" is refused by NewRemote. Handle holds each task to the
// network level of the card it runs under (the Remote's, or the one given
// to router.Attach): none, or no level stated, fails the task with
// POLICY_DENIED, recorded first as a tool.error (of no tool.call: its
// details.call_id is a new "call_" id, docs/protocol.md §2.3.1), before
// any I/O. A dial
// the policy refuses fails the task with POLICY_DENIED, not retryable.
//
// # Trace context
//
// A task's trace crosses A2A as a W3C traceparent header
// (docs/protocol.md §1.1: trace ids are W3C ids): a forwarded task sends
// the trace of its attempt (router.Task.Trace — the attempt's span when
// package telemetry observes the router), and a request the Server
// receives with a valid traceparent becomes a task.request whose trace is
// the caller's, so the task continues the caller's trace. A malformed
// header is ignored.
//
// # Errors
//
// Go errors of the package are [*Error]: a protocol.Code (so errors.Is
// against a code works and the error has an HTTP status and a CLowl code),
// the JSON pointer of bad outside input, and one of the sentinels
// ErrInvalidOptions, ErrCard, ErrInput.
//
// On A2A JSON-RPC the Server answers the A2A errors: TaskNotFoundError
// (unknown task, or one not visible there), TaskNotCancelableError (ended,
// or not running in this process), UnsupportedOperationError (a message to
// an ended task or to one running and not waiting for input, streaming
// when disabled, subscribing to an ended task, the extended card),
// InvalidParamsError (a message that does not map, a missing or invalid
// member, with the reason), InternalError (with no detail: the detail is logged),
// UnauthenticatedError and permission denied (a caller without the scope),
// a server error (-32000) at capacity. A body over MaxBodyBytes (by its
// Content-Length or as it is read) gets HTTP 413 and InvalidRequestError;
// a body that is not strict JSON gets ParseError.
//
// The simple surface normalises errors as docs/protocol.md §13.2.5, JSON bodies
// {"error", "message", "details"?}: agent_not_found (404); invalid_request
// (400: not JSON, unknown member, missing or empty prompt; 413 for a body
// over the limit; 405 for a wrong method); guardrail_violation (400, with
// details: a prompt over MaxPromptLength, or a task refused with
// POLICY_DENIED); internal_error (500, message "Unexpected failure" and
// nothing else: a panicking agent, an INTERNAL error, a store failure).
// Other task failures answer their code's HTTP status (the code table of
// docs/protocol.md §5.4) with the code in lower case as the error
// name ("timeout", "tool_failed", "input_required") and the agent's
// message; docs/protocol.md §13 has no row for them. Its llm_init_failed row has no
// counterpart: Clutch holds no LLM providers.
//
// Outbound, Handle returns wire errors the router retries when retryable:
// an unreachable peer, a dropped connection, HTTP 5xx and JSON-RPC
// internal (-32603) and server (-32000) errors are TOOL_UNAVAILABLE and
// retryable; HTTP 429 is RATE_LIMITED and retryable (the peer asked to
// come back later); other HTTP 4xx are not retryable (401/403
// UNAUTHORIZED, 404 NOT_FOUND, others TOOL_FAILED); A2A errors map to
// NOT_FOUND, UNAUTHORIZED, UNSUPPORTED_VERSION, UNSUPPORTED_TASK or
// INVALID_FIELD, not retryable.
//
// # Interoperability
//
// Tested in both directions against @a2a-js/sdk 1.3.0 (testdata/jspeer: an
// echo server and a client suite, run by the tests on 127.0.0.1) and
// against a2a-go/v2 itself. Both SDKs speak 1.0 natively; no compatibility
// layer is involved. What the tests found:
//
//   - The JS server answers a request without "A2A-Version: 1.0" as an
//     A2A 0.3 one (-32009 VersionNotSupportedError): the a2a-go client, and
//     NewRemote when it reads the card, always send the header.
//   - The JS server's card handler writes securitySchemes in the SDK's
//     internal form ({"scheme": {"$case": ...}}), which a2a-go cannot
//     decode. NewRemote then reads the card without its security members
//     (and logs it): the token is RemoteOptions.BearerToken anyway.
//   - The JS client resolves the card relative to the base URL, like a
//     browser resolves a link: give it an agent's base with a trailing
//     slash (".../agents/ken/"), or ".../agents/ken" loses "ken".
//   - A JS agent answering a follow-up to an INPUT_REQUIRED task must
//     publish the task first, back in WORKING: a first event still
//     INPUT_REQUIRED ends a blocking call at once.
//
// # Caveats
//
//   - A2A 0.3 is not spoken, in either direction: the SDK's compatibility
//     layer (a2acompat/a2av0) would pull the old a2a-go module and gRPC
//     into every build. A 0.3 card is refused by NewRemote with
//     UNSUPPORTED_VERSION.
//   - The SDK decodes data parts with encoding/json: integers beyond 2^53
//     lose precision before this package sees them.
//   - CancelTask cancels tasks running in this process only; a task of
//     another process over the same store answers TaskNotCancelableError.
//   - Dedup holds for a messageId sent again while the first is stored;
//     an answer to an INPUT_REQUIRED task sent twice after the first
//     moved the task on is refused (the task is no longer waiting).
//   - Rate limiters and the in-flight bound are per Server and per
//     process.
//   - A Server takes the router's store and registry as arguments; passing
//     others gives tasks it cannot see.
//   - Outbound, only url attachments are sent along (artifact_ref bytes
//     stay in the local store), and a typed payload is sent as a data part
//     only: an agent that reads text parts alone sees no text.
package a2a
