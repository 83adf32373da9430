// Package autogen translates the JSON of autogen-agentchat 0.4+ (the
// dump() / model_dump(mode="json") of its messages and events, the
// TaskResult that ends run_stream, saved team state, and the messages of
// autogen-core's gRPC worker runtime) into Clutch envelopes and back, and
// serves Handler, an HTTP endpoint an AutoGen app posts its message stream
// to. It is a translator (see package adapters) plus that one surface; it
// dials nothing.
//
// # Mapping
//
// Inbound (AutoGen → envelope), by AutoGen "type":
//
//	AutoGen                          envelope                    payload
//	TextMessage, MultiModalMessage,  task.request when it is the {"text": content} (MultiModal: text = the
//	StructuredMessage[<M>]           run's first chat message,   strings joined by "\n" when at most 64 KiB,
//	                                                             parts = content with
//	                                 else chat.message           each image {"attachment": i}; images are inline
//	                                                             attachments with a data: URL and the sniffed
//	                                                             media type); Structured: {"content": {...},
//	                                                             "format_string"}
//	ToolCallSummaryMessage           chat.message                {"text", "tool_calls", "results"}
//	HandoffMessage                   chat.message to the target  {"text", "target", "context"};
//	                                 agent (to = [target])       meta.handoff_target
//	StopMessage                      chat.system                 {"text"}
//	ToolCallRequestEvent             tool.call per FunctionCall  {"name", "call_id", "arguments" (as sent),
//	                                                             "args" (arguments parsed, when JSON of at
//	                                                             most 64 KiB)}
//	ToolCallExecutionEvent           tool.result per result;     the FunctionExecutionResult as sent; an error:
//	                                 tool.error when is_error    §5.4 {code TOOL_FAILED, message: content,
//	                                                             details {autogen: the result but its content,
//	                                                             name, call_id}}; call_id (docs/protocol.md
//	                                                             §2.3.1) is the FunctionCall's id on the call
//	                                                             and the result's call_id on its outcome
//	ModelClientStreamingChunkEvent   task.progress, meta.partial {"text", "full_message_id"?}
//	ThoughtEvent                     task.progress, meta.thought {"text"}
//	UserInputRequestedEvent          task.progress,              {"text", "request_id"}
//	                                 meta.input_required
//	MemoryQueryEvent, SelectSpeaker- task.progress               {"content": ...} or {"text"}, then the type's
//	Event, SelectorEvent, Code-                                  other members as sent
//	Generation/CodeExecutionEvent
//	TaskResult {messages,            its messages in order, then the stop reason's envelope:
//	stop_reason}                       "Handoff to … detected."        task.error INPUT_REQUIRED
//	                                   "External termination requested" task.cancel CANCELLED
//	                                   "Timeout of … seconds reached"  task.timeout TIMEOUT
//	                                   anything else, null            task.result {"stop_reason", "messages": n,
//	                                                                  "text": the last chat message's text}
//	Response {chat_message,          inner_messages, then chat_message
//	inner_messages}
//	TeamState, LLM messages          x.autogen.<snake_case type> {"content"?, other members as sent}
//	(SystemMessage, …)
//	any other type                   x.autogen.<snake_case type>, meta.autogen_unknown, counted (Unknown)
//	worker Message {cloudEvent}      the data's agentchat messages (GroupChatMessage, GroupChatStart,
//	                                 GroupChatAgentResponse); GroupChatTermination: its StopMessage, then
//	                                 task.result (task.error INTERNAL with details.error_type when it
//	                                 carries an error); GroupChatError: task.error; other schemas:
//	                                 x.autogen.<snake_case dataschema> {"data"}; meta.autogen_core names
//	                                 the event (id, topic, sender, dataschema)
//	worker Message {request}         x.autogen.rpc_request, to = [target type], payload as sent
//	worker Message {response}        x.autogen.rpc_response; task.error INTERNAL when error is set
//
// Members common to every message: id → meta.autogen_id and
// idempotency_key; source → from.agent_id (Options.Agents or Run.Agents +
// source, "agent:autogen/<source>" by default) and meta.autogen_source;
// created_at → ts (milliseconds) and meta.created_at as sent;
// models_usage → meta.usage (on the first envelope of a message only);
// metadata → meta.autogen_metadata; type → meta.autogen_type. Every message
// has meta.src "autogen-agentchat". An envelope's id is derived from its
// run, the AutoGen id and its part ("msg_" + 32 hex digits), so the same
// message in the same run always has the same id; a message without an
// AutoGen id (releases before mid-2025) gets one derived from its
// position in the input, its content and Run.Salt (meta.id_derived).
//
// Outbound (envelope → AutoGen) undoes the table for messages that came
// in through the adapter: the kind in meta.autogen_type, its common
// members from meta, the payload members back ("text" → content, parts +
// attachments → MultiModal content, call_id → id). One tool envelope goes
// out as an event with that one call or result. A TaskResult's envelope
// goes out as {"messages": [], "stop_reason"}. A plain Clutch
// chat.message, task.request or task.result addressed to one of
// Options.Peers goes out as a TextMessage (the payload's "text", else
// its JSON) from the sender's name. Messages that came in a worker
// message's CloudEvent, and other envelopes, have no AutoGen form
// (UNSUPPORTED_TASK, ErrNotMappable).
//
// Text is in one place of an envelope: an error's text is its message
// (details.autogen keeps the rest of what AutoGen sent: a tool result
// without content, an RpcResponse without error, a termination error
// without error_message; Outbound puts it back), and meta.stop_reason
// repeats a stop reason, and a tool error's details.name its tool name,
// of at most 256 bytes only. An envelope that would
// still be over the event store's limit has its longest strings cut, each
// ending in "… [truncated, <size> bytes]" and listed in meta.truncated;
// the translator has no artifact store at hand. Credentials are never
// stored: the value of a member named as one (authorization, cookie,
// x-api-key, api_key, token, secret, password, …) and any "Bearer …" or
// "Basic …" value becomes "[redacted]", in the payload and in meta.
//
// What is lost, and where it is kept:
//   - Inbound loses nothing: members without a place in the envelope are
//     in the payload or meta (meta.autogen_extra for a tool event's or
//     TaskResult's other members). created_at is kept verbatim in meta,
//     as ts has milliseconds only.
//   - The TaskResult's copy of the messages is not kept twice: they become
//     events, and the result payload counts them.
//   - Outbound of a tool envelope gives one call, not the whole event; a
//     TaskResult goes out without its messages; a StopMessage that
//     a handler turned into a plain chat.system has no kind to go back to.
//
// # Runs
//
// AutoGen has no run or thread ids on the wire. All envelopes of one
// Inbound call land in one run, thread and task: Run names them
// (InboundRun; Handler gives every caller's named run its own); without a
// Run they are "run:autogen/<key>", "thread:autogen/<key>" and
// "task:autogen/<key>", key being the first message's id (else a digest of
// it), the topic source (the team id) of a worker message, or, for a
// ToolCallExecutionEvent alone, the run its call landed in (through the
// adapters.Links index, by tool call id). The task is the AutoGen run:
// its first chat message is the task.request (unless Run.Started), and
// the TaskResult ends it. AutoGen's flat conversation has no subtasks, so
// a handoff is a chat.message addressed to the target, not a delegation:
// a child task would never see its own end, and a routing.decision is the
// Clutch router's own record.
//
// Streaming chunks are not coalesced: each is a task.progress in order
// (meta.partial, meta.full_message_id), and the complete TextMessage that
// follows them is the chat.message. A user input request is progress
// with meta.input_required, not an ending: AutoGen asks and waits inside
// the run, and the answer is the next user message of the same task; a run
// that stops for a handoff to the user ends with INPUT_REQUIRED.
//
// # Ingestion endpoint
//
// Handler accepts POST bodies of one JSON value (a message, a list, a
// TaskResult, a worker message) or, with Content-Type
// application/x-ndjson (or application/jsonl), one per line. Mount it with
// a {run} path value ("POST /autogen/runs/{run}") or name the run in the
// X-AutoGen-Run header: the AutoGen app's own name for the run (one
// team.run() call). Every request:
//
//   - is authenticated by HandlerOptions.Auth through package auth (401
//     without credentials, 403 without auth.ScopeSubmit, the rate and
//     in-flight limits of HandlerOptions.Limits);
//   - lands in the run auth.Deriver.RunID(caller, "autogen", run), keyed
//     with the store's secret: the same name from another caller is
//     another run, and nobody can compute or pre-create another caller's;
//     the thread and task ids share its suffix ("thr_…", "task_…");
//   - names AutoGen agents under the caller: from.agent_id is
//     "<caller agent id>/<source>" (agent:ken/planner), and meta.owner is
//     the caller, so no caller can write as another's agents or as a
//     Clutch agent — except the first event of a new run, which is sent
//     as the caller itself (its source kept in meta.autogen_source), so
//     the caller owns the run and reads it on every surface
//     (docs/protocol.md §6.7);
//   - is translated whole, every envelope is checked with
//     router.Router.Verify (the signature policy), and all are appended
//     in one store batch, in order: a bad line, or a refused message,
//     stores nothing (the error body names the line);
//   - is idempotent: messages with AutoGen ids dedup by their derived
//     envelope id; for messages without one, an Idempotency-Key header
//     makes the same body posted again a duplicate (without it, such
//     messages are new on every post — never lost, maybe twice).
//
// The envelopes go to the store (router.Router.Store), not through
// Router.Admit: they record work AutoGen has already done, so routing the
// task.request would run it a second time on a Clutch agent, and the
// router refuses the other types from outside anyway. The answer is 200
// with {run_id, thread_id, task_id, stored, duplicates, events [{id, type,
// seq, duplicate}]}; an error is {error, code, message, line, path} with
// the HTTP status of the code in docs/protocol.md §5.4 (400 for bad JSON or
// fields, 413 TOO_LARGE over HandlerOptions.MaxBodyBytes or MaxLines, 401
// BAD_SIGNATURE for a message the signature policy refuses, 500
// "Unexpected failure" for a store error).
//
// # Errors
//
// Inbound and Outbound return *adapters.Error values (adapters.ErrInbound,
// adapters.ErrOutbound) with a protocol.Code and the JSON pointer of the
// member: INVALID_JSON, DUPLICATE_KEY, INVALID_UTF8, TOO_DEEP for bad JSON;
// TOO_LARGE over Options.MaxBytes; MISSING_FIELD for a message without
// source or content, a call without id or name, a result without call_id
// or content, a handoff without target, or input of no known shape
// (ErrNotAutoGen); WRONG_TYPE for a member of the wrong JSON type (null id,
// source or created_at included); INVALID_FIELD for a created_at that is not
// RFC 3339, an image that is not base64, an empty call list, an id
// (request_id and full_message_id included) over 128 bytes, a CloudEvent
// attribute over 256 bytes; TOO_LARGE for a message that cannot fit the
// event store even with its text cut. Outbound of an envelope without an AutoGen form:
// UNSUPPORTED_TASK (ErrNotMappable).
//
// # Caveats
//
// AutoGen is in maintenance mode (its successor is Microsoft Agent
// Framework). The worker-runtime messages are the proto3 JSON of
// agent_worker.proto as constructed from the sources, not captured from a
// running runtime. A run posted as a stream and then as its TaskResult is
// stored once only when the messages carry AutoGen ids: older releases'
// messages in a TaskResult are stored again. The task.request of an AutoGen
// run is in the store without a router handle: router.Router.Recover ends a
// run whose TaskResult never came with INTERRUPTED, as it does any task whose
// process went away. Links to tool calls are kept in memory (the last
// adapters.DefaultIndexSize) unless Options.Index is one over the store.
package autogen
