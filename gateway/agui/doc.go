// Package agui serves Clutch runs as AG-UI event streams, so that agent front
// ends built on the AG-UI protocol (@ag-ui/client's HttpAgent, CopilotKit and
// the like) can start a Clutch run and show it as it happens: the agents'
// steps, their tool calls with arguments and results, delegated subtasks,
// progress as shared state, and the answer as an assistant message.
//
// # Basics
//
// New returns an http.Handler over a router. It does not authenticate: put
// the one authenticator of package auth in front of it (the gateway mounts it
// behind its auth middleware at /v1/agui); a request without an
// auth.Caller in its context is refused with 401.
//
//	h, err := agui.New(r, &agui.Options{Agent: "agent:assistant"})
//	ag := http.StripPrefix("/v1/agui", auth.Middleware(authn, nil)(h))
//	mux.Handle("/v1/agui", ag) // the URL an HttpAgent is given: a POST is never redirected
//	mux.Handle("/v1/agui/", ag)
//
// The handler serves, at its root ("" or "/"; any other path is 404):
//
//   - POST with a RunAgentInput body (what HttpAgent.runAgent sends:
//     threadId, runId, messages, tools, context, state, forwardedProps).
//     The last user message is submitted as a task.request through the
//     router (Router.Submit: validated, routed, recorded) and the answer is
//     an SSE stream of that run's AG-UI events, which ends when the run's
//     root task ends. The caller needs auth.ScopeSubmit (else 403).
//   - GET ?run=<run_id>[&after=<seq>] streams an existing run the same way:
//     the events stored so far, then live ones, until the root task ends.
//     A caller without auth.ScopeReadAll may watch only the runs it
//     submitted; any other run is answered 404, as one that does not exist.
//
// Refusals before the stream starts are HTTP errors with the gateway's
// error body {"error":{"code","message","retryable"}} and the status of
// the protocol code (400 for a bad RunAgentInput, 413 over MaxBodyBytes,
// 503 with Retry-After when the router is at capacity).
//
// # The request
//
// Options.Request maps a RunAgentInput to the task.request's contract
// (payload type, payload, recipients, requires). When it is nil,
// DefaultRequest sends payload type PayloadInput ("agui.input.v1", an
// InputPayload: the last user message's text and id, and the client's
// state, context and forwardedProps) to Options.Agent, or when that is ""
// routes it by Options.Requires. New registers PayloadInput in the schema
// registry behind the router's validator (schema.RegistryOf), when it has
// one.
//
// The handler sets the rest, so a client cannot claim to be someone else or
// write into another caller's run: from.agent_id is the caller; run_id is
// Handler.RunID(caller, runId) and idempotency_key is runId, so posting the same
// runId again is the same run (the store's dedup answers it, and the
// stream replays it); thread_id is Handler.ThreadID(caller, threadId), so every
// run of one AG-UI thread is one Clutch thread. meta.agui_thread_id and
// meta.agui_run_id keep the client's ids, which RUN_STARTED and
// RUN_FINISHED carry (for a run that did not come from AG-UI, the Clutch
// thread_id and run_id). The response header X-Clutch-Run-Id names the
// Clutch run, for a later GET.
//
// # The mapping
//
// A Translator turns a run's stored events, in seq order, into AG-UI events.
// The run's root task is its first task.request without parent_task_id;
// every other task.request of the run (a delegated subtask) is shown as a
// tool call whose arguments are its payload and whose result is its
// outcome. The first event of a stream is RUN_STARTED.
//
//	Clutch event                       AG-UI events
//	---------------------------------  -----------------------------------------------------------
//	task.request, root                 RUN_STARTED {threadId, runId}
//	                                   (the user message is the client's own; nothing else)
//	task.request, any other task       TOOL_CALL_START {toolCallId: task_id, toolCallName:
//	                                   payload_type or "task"}, TOOL_CALL_ARGS {delta: the
//	                                   payload's JSON}, TOOL_CALL_END
//	task.accept                        STEP_STARTED {stepName: "<agent_id>/<task_id>"}
//	                                   (not again while that task's step is open)
//	task.progress                      STATE_SNAPSHOT {snapshot: {"tasks": {<task_id>:
//	                                   {"agent_id", "progress": <its last progress payload>}}}}
//	                                   (every task that reported progress, in order first seen)
//	task.error announcing a retry      STEP_FINISHED, CUSTOM {name: "clutch.task.error",
//	(details.will_retry)               value: the error}
//	task.result, root                  TEXT_MESSAGE_START {messageId: the event id, role:
//	                                   "assistant", name: agent_id}, TEXT_MESSAGE_CONTENT
//	                                   {delta: Text(result)}, TEXT_MESSAGE_END (no message for
//	                                   an empty text), STEP_FINISHED for every open step,
//	                                   RUN_FINISHED {threadId, runId, result: the payload}
//	task.error, task.cancel,           STEP_FINISHED for every open step, RUN_ERROR
//	task.timeout, root                 {code, message} of the error payload (CANCELLED,
//	                                   TIMEOUT when the payload names none)
//	task.result/error/cancel/timeout,  TOOL_CALL_RESULT {messageId: the event id, toolCallId:
//	other task                         task_id, content: Text(result), or the error's JSON},
//	                                   STEP_FINISHED of the task's step
//	task.question, root                STEP_FINISHED for every open step, RUN_FINISHED
//	                                   {threadId, runId, outcome: {type: "interrupt",
//	                                   interrupts: [Interrupt of the question]}}
//	task.answer                        nothing (the resume that stored it answered it)
//	tool.call                          TOOL_CALL_START {toolCallId: the call id, toolCallName:
//	                                   payload name, else tool}, TOOL_CALL_ARGS {delta: the
//	                                   JSON of payload args} (when present), TOOL_CALL_END;
//	                                   nothing for a call already sent (same call id)
//	tool.result                        TOOL_CALL_RESULT {messageId: the event id, toolCallId:
//	                                   its call's, content: the JSON of
//	                                   structuredContent, else content (a string as it is,
//	                                   else its JSON)}
//	tool.error                         TOOL_CALL_RESULT as tool.result, content: the error's
//	                                   JSON
//	chat.message                       TEXT_MESSAGE_START/CONTENT/END {messageId: the event id,
//	                                   role: "user" when sent by the root task's requester,
//	                                   else "assistant"; name: from.agent_id}
//	chat.system                        the same with role "system"
//	routing.decision, routing.failure, CUSTOM {name: "clutch." + type, value: the payload}
//	x.<vendor>.<name>
//	agent.register/heartbeat/update    nothing: registry events are not part of a run's work
//
// Tool calls pair by call id (docs/protocol.md §2.3.1, protocol.ToolCallID):
// a tool.call's is its payload's call_id, or its event id when it has
// none; a tool.result or tool.error answers the unanswered tool.call of
// its task with its call id (call_id, else details.call_id). One whose
// call id names no such call (a call refused before it was made) stands
// alone. One without a call id, stored before the rule, answers the
// oldest unanswered tool.call of its task (of the same name, when it
// names one). An outcome with no call to belong to is preceded by
// TOOL_CALL_START and TOOL_CALL_END under its call id (its event id when
// it has none, or when that id was sent already), so every result has a
// call. Text is
// Options.Text, DefaultText when nil: a JSON string payload as it is, else
// its "text", "content", "message" or "summary" string member, else its
// compact JSON. Every AG-UI event carries the timestamp of the Clutch
// event it comes from (its ts, in Unix milliseconds).
//
// After the root task's final event (RUN_FINISHED or RUN_ERROR) the
// translator is Done and the stream ends; events stored later in the run
// (a subtask's cancellation, say) are not sent. A step still open then is
// finished first, so every stream passes the AG-UI client's event
// verification.
//
// # Interrupts: a person in the loop (docs/protocol.md §2.7)
//
// When the run's root task asks (router.Task.Ask), its AG-UI run ends with
// RUN_FINISHED whose outcome is an interrupt: one Interrupt whose id is the
// question id, reason its kind ("question" or "approval"), message its
// text, responseSchema its schema (an enum of its choices; an approval's
// {decision, reason, arguments}), expiresAt its deadline, and
// metadata.clutch the question as stored. The Clutch task waits; it is not
// over. The client's next RunAgentInput on the thread, with a resume entry
// for that id, answers it: status "resolved" answers with the payload, as
// the authenticated caller (router.Router.Answer: who may answer is up to
// the question, so no submit scope is needed), and "cancelled" cancels the
// task (its requester only). The response streams the same Clutch run on
// from the question, as a new AG-UI run with the input's runId: the
// resumed attempt, up to the result or the next interrupt. A resume entry
// for a question that is not waiting in a task of the caller's thread is
// answered 404, whether it exists or not; a value the question refuses
// 400; a second answer 404 (the task waits no more). Only one question
// waits per task, so resume has exactly one entry.
//
// # The stream
//
// Each AG-UI event is one SSE frame "data: <json>\n\n", the framing the
// AG-UI client parses; the last frame of each Clutch event also carries
// "id: <seq>", so an EventSource that reconnects resumes with
// Last-Event-ID (GET only; after= does the same). A resumed stream starts
// with RUN_STARTED again, then sends exactly the frames of the full stream
// whose seq is past the resume point. While a run is idle, ": ping"
// comments are sent every Options.Heartbeat. Each stream is a Follow of
// the store, and all the Follows of a store share its one follower
// (docs/protocol.md §8.1), so an append wakes one goroutine, not one per
// open stream.
//
// # Caveats
//
// A client that goes away stops its stream, not its run: the task runs on
// and a GET can watch it again. A run with no task.request (only chat
// messages) cannot be watched here (404). The stream of a run whose root
// task never ends stays open until the client leaves.
package agui
