// Package router is the heart of Clutch: it matches task requests to
// agents, runs them, and records every step as an event in the store
// (docs/protocol.md §1.3–§1.6, §2, §4, §5, §10).
//
// # Basics
//
// A Router is built over a store and an agent registry, with a Validator
// (a *schema.Registry, or a *schema.Binder for workflows) in its Options
// to check payloads. In-process agents register an AgentCard and a Handler; callers Submit a
// task.request and Wait on the returned Handle:
//
//	r, _ := router.New(st, reg, &router.Options{Validator: schemas})
//	r.Register(ctx, kenCard, func(ctx context.Context, t *router.Task) (*router.Result, error) {
//		q, err := router.Input[schema.ResearchQuery](t)
//		...
//		t.Progress(ctx, map[string]any{"step": "searching"})
//		return &router.Result{PayloadType: "research.summary.v1", Payload: summary}, nil
//	})
//	req, _ := r.NewRequest("agent:ui", "research.query.v1", query)
//	req.Requires = []string{"skill:research"}
//	h, _ := r.Submit(ctx, req)
//	out, err := h.Wait(ctx)
//
// Card builds the card of an agent that needs only capability ids,
// router.Card("agent:ken", "skill:research"); write a protocol.AgentCard
// literal for display names, tags or limits (its v may be left empty).
// Register stores a card once: registering the same card at every start
// of the process appends nothing (registry.Register).
//
// A handler reads its request (Task.Request, Input), reports progress
// (Task.Progress), calls tools (CallTool, below), emits other events
// (Task.Emit), puts
// artifacts (Task.PutArtifact), delegates subtasks (Task.NewSubtask,
// Task.Delegate, which blocks until the subtask ends) and returns a Result
// or an error. Return Fail(code, message, retryable, details) for a wire
// error of docs/protocol.md §5.4; any other error is coded with
// protocol.CodeOf. An error that wraps a failed delegation
// (fmt.Errorf("research: %w", err)) keeps the subtask's code, retryability
// and details, and its message reads "research: " and the subtask's message.
//
// A handler that streams text — a model's tokens — writes it to a
// TextStream (Task.TextStream(minBytes)), which stores it as task.progress
// events {"text": ...} (TextProgress) of at least minBytes, never split
// inside a UTF-8 character, in the order written, from any number of
// goroutines; its Flush stores the rest when the stream ends. The bridges
// to eino, Genkit and LangChainGo stream through one.
//
// The store, registry, validator and id source a Router was built with
// are returned by Store, Registry, Validator and IDs: servers and adapters
// in front of a router take the *Router alone. One that registers payload
// types of its own does so in schema.RegistryOf(r.Validator()), the
// schema registry behind the validator, when there is one.
//
// # Tool calls (docs/protocol.md §2.3)
//
// CallTool runs a tool for the task and records the call and its
// outcome under one call id, so that every reader pairs them (§2.3.1):
//
//	hits, err := router.CallTool(ctx, t, "mcp:browser", "search", args,
//		func(ctx context.Context) ([]Hit, error) { return browser.Search(ctx, q) })
//	if err != nil {
//		return nil, err // the tool.error is stored; the task fails with it
//	}
//
// It stores a tool.call {call_id, tool, name, args} (call_id is the
// event's own id), runs the func, and stores a tool.result {call_id, tool,
// name, content} or a tool.error (the wire error of the func's error,
// with call_id, tool and name in its details), then returns the func's
// result and error as they are. A context that ended before the call
// stores nothing; one that ends during it still gets the tool.error
// (CANCELLED or TIMEOUT). The Observer sees both events, so package
// telemetry makes one execute_tool span of each call. Task.Emit stays for
// events of other shapes; it gives a tool.call without call_id its own id
// as call_id, and refuses a call id that is not a string of 1 to 256
// bytes. The MCP client (package adapters/mcp) follows the same rule.
//
// Code that sees a call's start and its end at two moments, such as an
// agent framework's callbacks, uses Task.StartTool: it stores the
// tool.call and returns a ToolCall whose Done or Fail stores the one
// outcome under the same id. Task.RecordModelCall stores a call of a
// language model as one x.clutch.model_call event with its usage
// (docs/protocol.md §2.3.2). TaskFrom finds the running Task in any
// context derived from the one its handler was given, so callbacks and a
// framework's tools record events of the right task and delegate from it.
// Router.Call is that delegation in one step: a subtask of the running
// task when there is one, else a root task submitted and waited for.
//
// # Middleware
//
// Options.Middleware wraps every handler registered with the router
// (Register and Attach) in decorators of type Middleware, func(Handler)
// Handler, the first in the list outermost: logging, tracing, metrics and
// policies are written once for every agent. A middleware sees the Task,
// may change the result or the error, or refuse the task by returning an
// error without calling next (the attempt then ends in a task.error, as if
// the handler had returned it).
//
// # Observer
//
// Options.Observer is told of every attempt's steps — its start, a wait in
// the queue, the routing decision or failure, the events its handler
// stores, a retry, the task's end — on the router's goroutines, with the
// attempt's context. StartAttempt returns the attempt's context (the
// handler's context and its subtasks' inherit its values) and the trace
// context the router stamps on every event it stores for the attempt and
// on the requests the handler delegates (Task.NewSubtask); Task.Trace
// returns it, for adapters that carry it across a process boundary. The
// task.request keeps the trace its sender gave it. Package telemetry
// implements an Observer with OpenTelemetry; a Middleware cannot, as it
// sees only the handler.
//
// # Validation
//
// Submit (and Delegate, for subtasks) validates a request before anything
// is stored, each part once: the envelope (protocol.Message.Validate, as
// it is encoded), then its payload with Options.Validator (docs/protocol.md
// §3): a *schema.Registry checks it against the schema of its
// payload_type; a *schema.Binder against the workflow its run is bound to,
// else its registry. An unknown payload_type fails unless the schema
// registry is permissive; a request without payload_type and schema_ref is
// untyped and passes. Without a Validator, payloads are not checked. An
// invalid payload is refused with ErrInvalidPayload (code VALIDATION),
// wrapping the validator's error (from package schema, a
// *schema.ValidationError lists the violations): the request is not
// stored, no event is written and no handler runs. The router itself does
// not depend on package schema or its JSON Schema engine. NewRequest and
// NewSubtask refuse a malformed payload type at once (ErrInvalidRequest,
// INVALID_FIELD).
//
// Results are validated the same way; an invalid result becomes a
// task.error with code VALIDATION whose details keep the result for audit,
// and the violations when the validator's error lists them (see
// Validator).
//
// # Routing (docs/protocol.md §4.2)
//
// Each routing pass, recorded as a routing.decision event:
//
//  1. Candidates: the agents whose capabilities include every id in
//     requires[] (AND); or, when "to" names agents other than the router,
//     exactly those (an explicit recipient skips scoring, not the hard
//     filters).
//  2. Hard filters, each rejection recorded with its reason: online
//     (heartbeat within the TTL, or registered in-process), a handler in
//     this router, security policy (policy.sandbox needs a sandboxed agent
//     and no capability of trust_level prod), tool allowlist (every tool
//     server the used capabilities name must be allowed), network (a
//     requires[] entry "network:<level>" needs a card network at least that
//     open: none < egress-restricted < open), no cycle (the agent is not on
//     the task's delegation chain), and capacity (in flight below
//     limits.max_concurrency).
//  3. Preference score: the weighted share of prefers[] entries and of the
//     message's domain the agent meets — "tag:"/"domain:" entries against
//     capability tags, "tool:"/"mcp:" against tools and servers, other
//     kinds against capability ids (Weights, configurable).
//  4. Tie-breakers, in order: least loaded, best recent success rate, round
//     robin.
//
// The decision names the selected agent, the candidates with their scores,
// a reason in a fixed machine form ("matched requires[skill:research],
// lowest load (0 in flight)"), the rejected agents with why, and an
// explanation: the same in plain English for people, naming agents by
// their display names ("Ken chosen over Research 2: both have
// skill:research; equal preference score (0.5); Ken has fewer tasks in
// flight (0 vs 2)."), for surfaces to show. Code matches on the reason,
// never on the explanation, whose words may change. With many agents the
// lists hold the first 16 and the counts are exact; an explanation names
// at most three agents, rejections or preferences and counts the rest.
// No match gives a routing.failure event and a task.error: NO_MATCH,
// POLICY_DENIED, CYCLE or CAPACITY. When every matching agent is only
// busy, the task waits in a bounded queue (MaxQueued, QueueTimeout) and
// fails with CAPACITY after.
//
// # Lifecycle (docs/protocol.md §2.1, §5)
//
// Every task leaves task.request, then per attempt routing.decision and
// task.accept (stored together; for the first attempt, with the request
// too when Submit can decide: the agent is in this router and has room,
// in a team the team does not count Budget.MaxTasks, and a request with an
// idempotency_key goes to a store.Conditional (which stores the batch only
// if the request is new) in a router without an Observer or
// Budget.MaxTasks — docs/protocol.md §5.1), any task.progress, and
// ends with exactly one of task.result, task.error, task.cancel or
// task.timeout — one terminal event per task, whatever redeliveries,
// cancels, timeouts and shutdowns race with it (a partial retry, below,
// adds a new attempt with a terminal event of its own). No event of an
// attempt is stored after the task's terminal event: a handler's Progress
// or Emit after it fails with ErrTaskEnded. storetest.CheckTerminals
// checks a log for this.
//
// The terminal event is always storable. When the store refuses it — a
// result (or an error's details) over the store's event size limit — the
// router stores in its place a task.error of code TOO_LARGE, not
// retryable, whose details give "event" (the refused type), "size" and
// "limit"; any other refusal gives a retryable INTERNAL task.error. Wait
// returns what the log holds. Only a store that refuses that small event
// too (closed, failing) leaves the task without a terminal event; Wait
// then returns a retryable INTERNAL error saying so, and Recover ends the
// task after a restart. Large outputs belong in artifacts
// (Task.PutArtifact), referenced from the result's attachments; the
// store's event size limit must leave room for the router's own events (a
// few KiB).
//
// Retries: a retryable error (the error's Retryable, or its code's default)
// is retried with Options.Backoff up to MaxAttempts; the failed attempt's
// task.error carries details.will_retry and the next attempt's events carry
// attempt+1. A handler that panics ends its attempt with INTERNAL; the host
// process never crashes. limits.max_runtime_sec cancels the handler's
// context and stores task.timeout at once, even if the handler ignores its
// context. Handle.Cancel cancels a task and its whole subtree: each gets a
// task.cancel with the reason.
//
// Delivery is at least once with dedup by the receiver (§5.1, §5.2): a
// request whose id, or run_id and idempotency_key, is already stored never
// runs twice; Submit returns a handle on the task it started, whether
// that task is running, has ended, or has been stored but not started yet
// (a task id is registered before its request is stored, and a
// redelivery waits for that registration to settle rather than take the
// task for interrupted). Dedup comes first, then validity: a redelivery
// with a new id but the task's run_id, idempotency_key and task_id
// follows the running task; any other request for a running task id is
// refused with ErrInvalidRequest (INVALID_FIELD).
//
// Delegation (§1.3): a subtask has its own task_id, parent_task_id set, the
// same run_id and thread_id. Routing it to an agent already on its chain is
// refused with CYCLE (CLowl E015). Budget limits a run's number of tasks
// and delegation depth (BUDGET, CLowl E012).
//
// # Asking a person (docs/protocol.md §2.7)
//
// A handler stops to ask with Task.Ask and returns the error it gives;
// the task then waits for the answer, holding no goroutine and no slot of
// MaxInFlight, and its Handle's Wait returns the question
// (Outcome.Question, error INPUT_REQUIRED):
//
//	market, err := t.Ask(ctx, protocol.Question{Text: "Which market?", Choices: []string{"fintech", "health"}})
//	if err != nil {
//		return nil, err // ErrWaiting: the task waits
//	}
//
// Router.Answer stores the answer (checked against the question: who may
// answer, its choices, its schema through the Validator's ValueValidator)
// and runs the handler again from the start as a new attempt on the agent
// that asked; Ask then returns the recorded answers in order. So a handler
// asks the same questions in the same order each time and does its side
// effects after the answers they need. One answer per question is stored,
// whoever races (ErrAnswered for the others). A question's deadline ends
// the task with a TIMEOUT task.error; Handle.Cancel and Router.Cancel end
// a waiting task with its task.cancel. Recover leaves waiting tasks
// waiting and runs on those answered just before a restart. Router.Waiting
// counts the waiting tasks. Ask is for root tasks only.
//
// A handler whose state lives outside the task (a bridge to a LangGraph
// thread, a remote A2A task, a paused crew) does not replay: it calls
// Task.Resumed first, which returns the last answered question (with the
// Details the handler stored when it asked) and its answer, and resumes
// the outside system with them; its next Ask asks a new question.
//
// # Signatures (docs/protocol.md §6.1)
//
// The router enforces the registry's signature policy
// (registry.Options.Signatures, the keys of registry.Options.Keys and of
// the cards) where envelopes from outside enter, before anything is
// stored: Submit verifies a request that arrived as bytes (decoded) or
// carries a signature; Admit takes a decoded inbound envelope, verifies it
// and submits a task.request, cancels the task of a task.cancel (sent by
// the task's requester only: ErrUnauthorized otherwise), or passes
// agent.register, agent.update and agent.heartbeat to
// registry.Registry.Admit; Verify checks any other envelope an adapter
// acts on. A refusal matches registry.ErrSignature, with code
// BAD_SIGNATURE or UNKNOWN_KEY.
//
// A request built in process (NewRequest, or a surface building one for a
// caller it authenticated) is the process's own and needs no signature:
// identity there is the surface's authentication, not an envelope
// signature. Delegated subtasks are the router's own too.
//
// Options.Signers gives local agents private keys: every event such an
// agent sends (task.accept, task.progress, task.result, task.error, tool
// events, delegated requests) is signed as the router stores it. Register
// refuses an agent whose signing kid and public key neither its card nor
// the registry's configured keys list.
//
// # Restarts, partial retry and replay
//
// After a restart on a durable store, call Recover once the agents are
// registered: tasks that were accepted but never ended are failed with a
// retryable INTERRUPTED error (RecoverFail, the default: a handler with
// side effects is not run twice behind the caller's back) or routed again
// (RecoverRedispatch). A redelivered request of such a task gets the same
// treatment, once: concurrent redeliveries and Recover end or re-run it
// once. Shutdown ends running tasks with INTERRUPTED too. Retry runs one
// failed or timed-out task of a run again from the log, as a new attempt.
// Replay (or Router.Tree) rebuilds a run's task tree — tasks, parents,
// states, attempts, decisions, outcomes — from any store.
//
// # Admission and shutdown
//
// Options.MaxInFlight (DefaultMaxInFlight, 10000, when 0; NoLimit for no
// limit) bounds the tasks the router holds at once: running, queued for
// an agent, waiting for a retry, subtasks included. Past it Submit,
// Delegate and Retry fail at once with ErrCapacity (code CAPACITY,
// retryable): nothing is stored, no goroutine is started. The error
// wraps a *protocol.ErrorPayload whose details hold "retry_after_sec"
// (RetryAfter, for an HTTP Retry-After header) and "max_in_flight".
// Redeliveries of tasks the router holds are answered, not refused; a
// redelivery under another task id may be refused while the router is
// full. Recover with RecoverRedispatch stops with ErrCapacity when the
// router is full; call it again later.
//
// Shutdown(ctx), like http.Server.Shutdown, refuses new submissions
// (ErrClosed), cancels every running handler's context, ends each running
// task with a retryable task.error INTERRUPTED (unless it ended first),
// and waits for the handlers to return until ctx ends. Handlers still
// running then — one that ignores its context, or one past its
// max_runtime_sec — are abandoned: Shutdown returns a *ShutdownError
// listing their task ids, which matches ErrAbandoned and ctx's error
// (context.DeadlineExceeded). Their terminal events are stored already;
// their goroutines cannot be killed and leak until the handlers return
// (whatever they then try to store is refused), and they still count
// against MaxInFlight. Calling Shutdown again waits for them. Close is
// Shutdown with a deadline of DefaultCloseTimeout (10 s).
//
// # Teams
//
// Routers in several processes that share one store (a store/pgstore
// database) form one team with package router/team, which plugs into a
// router through one hook: SetTeam installs a Team and returns the
// Member through which the team acts on the router's tasks. A Team
//
//   - gives a handler (Team.Handler) for each agent hosted by another
//     process, and the event that dispatches an attempt there
//     (Team.Dispatch), stored with its routing.decision and task.accept;
//   - names the process routing a task (Team.Owner), stored with its
//     task.request, and again when Retry runs it here;
//   - answers a redelivered request of an open task that does not run
//     here (Team.Redelivered), and is Recover in a team (Team.Recover);
//   - counts Budget.MaxTasks over the store for the whole team
//     (Team.Count).
//
// The Member runs here the attempts other processes dispatched to this
// router's agents (Member.Execute) and takes over the tasks of processes
// that died (Member.Adopt). A router without a Team behaves as in one
// process. See package router/team for the team's contract.
//
// Fencing: every terminal event the router stores carries the
// idempotency key "clutch.end/<task id>/<attempt>", so the store lets
// exactly one end of an attempt in, whichever process stores it; a router
// whose end was refused as a duplicate takes the stored end as the
// task's outcome.
//
// # Clock
//
// Clutch has one clock concept, a func() time.Time, and by default one
// clock: the store's. A store's Options.Clock gives its events their
// times; a registry opened without Options.IDs makes its ids on that clock
// (store.ClockOf); and a router without Options.IDs takes the registry's
// (registry.Registry.IDs). Every id, every event's ts, every timestamp the
// router compares and the registry's heartbeat liveness then come from
// the one function set on the store. A test sets it once
// (memstore.Options.Clock) and moves it; routertest does this with one
// routertest.Clock. Options.IDs of the router or the registry overrides
// the default for that component alone.
//
// Durations are measured on real time, not on that clock: max_runtime_sec,
// the backoff between attempts and the queue timeout are timers and
// context deadlines. Tests of them run in a testing/synctest bubble, whose
// fake time moves only when every goroutine waits.
//
// # Errors
//
// A task's failure is a *protocol.ErrorPayload, returned by Handle.Wait and
// Task.Delegate and matched with errors.Is against a protocol.Code
// (protocol.CodeNoMatch, CodeTimeout, ...). The router's own errors are the
// sentinels of errors.go (ErrClosed, ErrInvalidRequest, ErrInvalidPayload,
// ErrUnknownTask, ErrNotRetryable, ErrTaskEnded, ErrInvalidOptions,
// ErrCapacity, ErrAbandoned, ErrUnauthorized, ErrWaiting, ErrAnswered,
// ErrNotWaiting) and *ShutdownError; signature
// refusals are registry.ErrSignature.
//
// # Caveats
//
// Each running task holds one goroutine, on which its handler runs.
// Goroutines outlive their task for a few seconds, to run the next one;
// Shutdown (or Close) stops them, so a test that checks for leaked
// goroutines (goleak) must shut the router down, and release any handler
// it abandoned. A task's context ends when its handler returns, so a
// handler must wait for the subtasks it delegates (Delegate does). A
// handler that ignores its context after a timeout or cancel keeps its
// concurrency slot and its MaxInFlight slot until it returns. Without a
// Team, Budget.MaxTasks counts the tasks a run has while some of them
// are running in this router; in a team it counts every task of the run
// in the log (Team.Count, see "Teams").
// Recover scans the task events of the whole log.
//
// For unit tests of agents, package routertest wraps all of this over an
// in-memory store with deterministic ids and a test clock.
package router
