// Package langgraph connects LangGraph to Clutch (docs/protocol.md §7.3):
// a translator of what a LangGraph Agent Server (LangGraph Platform,
// `langgraph dev`, `langgraphjs dev`) and LangChain emit, and a bridge that
// registers a graph served by an Agent Server as a Clutch agent.
//
// # Mapping: LangGraph → Clutch
//
//	LangGraph                                   Clutch                                   ids kept
//	------------------------------------------  ---------------------------------------  -------------------------------
//	SSE metadata {run_id, attempt}              task.accept (root task)                   run_id → run "run:<id>", task "task:<id>"
//	values                                      task.progress langgraph.values.v1         payload = state
//	values/updates __interrupt__, tasks result  task.error INPUT_REQUIRED                 meta.lg_interrupts = interrupt ids
//	  interrupts, protocol input.requested        (message = the interrupt's value text)  details.interrupts = [{value,id}]
//	updates {node: update}                      task.progress langgraph.updates.v1        meta.lg_ns, the node in the payload
//	  AI message tool_calls                     + tool.call per call                      meta.lg_tool_call = tool_calls[i].id
//	  tool message                              + tool.result, or tool.error (status      meta.lg_tool_call = tool_call_id
//	                                              "error", code TOOL_FAILED)
//	  tool message __handoff_destination        + routing.decision {selected: node}       meta.lg_handoff
//	messages (messages-tuple) [chunk, meta]     chat.message, meta.partial                meta.lg_message_id, lg_node, lg_metadata
//	messages/partial (cumulative)               chat.message with the new text only,      meta.lg_message_id
//	                                              tool.call once a stop reason is set
//	messages/complete                           chat.message (+ tool.call/result)
//	messages/metadata                           task.progress langgraph.metadata.v1       cached for later chunks of the message
//	tasks / debug task (start)                  task.request of a child task              task "task:<task id>", parent = namespace task
//	tasks / debug task_result                   task.result / task.error (error set)      meta.lg_task_id, lg_node
//	checkpoints / debug checkpoint              task.progress langgraph.checkpoint.v1     idempotency_key "lg-checkpoint:<id>", meta.lg_checkpoint
//	custom, on_custom_event                     task.progress langgraph.custom.v1
//	events (astream_events v2 records)          on_tool_start/end/error → tool.call/      meta.lg_event_run_id (the call id)
//	                                              result/error; on_chat_model_stream →
//	                                              chat.message partial; on_chat_model_end
//	                                              → chat.message (+ tool.call); others →
//	                                              task.progress langgraph.event.v1
//	error {error, message} / "Run not found"    task.error TOOL_FAILED / NOT_FOUND        details.error = exception class
//	end                                         task.result {values: last values}, or
//	                                              x.langgraph.end after an interrupt
//	protocol v2 {type:"event", method, params}  lifecycle running → task.accept, started/  namespace → child task, seq → meta.lg_seq
//	                                              completed/failed (sub) → child task.*;
//	                                              tools → tool.*; messages content-block-
//	                                              delta → chat.message; others as above
//	Run object / run webhook by status          pending → task.request, running → accept,  run_id, thread_id, meta.lg_assistant_id
//	                                              success → task.result {values},
//	                                              error → task.error, timeout →
//	                                              task.timeout, interrupted → task.cancel
//	                                              (INPUT_REQUIRED with __interrupt__)
//	Thread object                               x.langgraph.thread (INPUT_REQUIRED per    thread_id → thread "thread:<id>"
//	                                              task when it lists interrupts)
//	LangChain message (alone)                   chat.message / tool.call / tool.result
//	any other mode, method or status            x.langgraph.<kind>, meta.lg_unknown,       counted by Translator.Unknown
//	                                              payload = the data
//
// Subgraph namespaces ("mode|node:<task id>|…") put a message in the task of
// the innermost namespace element, a child of the one outside it; every
// message keeps the event name (meta.lg_event), mode, namespace and the SSE
// id (meta.lg_seq). Message ids are derived from the run, the frame (event,
// id, data) and the message's place in it, so a re-delivered or re-joined
// stream gives the same ids and the event store deduplicates it.
//
// An interrupt is reported as task.error INPUT_REQUIRED (not an extension
// event): it is what the router and the A2A bridge already use for "the
// agent needs input", a follow-up task.request on the same thread resumes
// it, and the interrupt ids stay in meta and details.
//
// # Mapping: Clutch → LangGraph (Outbound)
//
// A task.request becomes a run-creation body {"assistant_id", "input"}; a
// message made from a values, updates, custom or checkpoints frame, or an
// x.langgraph.* event made from a frame, becomes that frame again
// ({"event", "data", "id"?}). Other envelopes have no LangGraph form
// (UNSUPPORTED_TASK).
//
// # What is lost
//
// messages/partial loses nothing but its repetition (only new text is
// reported; a non-text content list is reported whole each time). Streamed
// tool_call_chunks stay in the chat.message payload. Request headers the
// server echoes into metadata and config (authorization, cookie,
// x-api-key, …) are replaced by "[redacted]" before anything is stored. The
// timestamp is the record's own when it has one (debug timestamp, protocol
// timestamp, run updated_at), else the translation time. A lone record that
// names no run lands in the run "run:langgraph" with meta.lg_no_run; use a
// Stream with a Scope to place records of one live run.
//
// # Input, state and errors
//
// Translator.Inbound takes an SSE stream, a JSON record, a JSON array of
// records or JSON lines; the records of one input are one stream. Stream
// translates a live run frame by frame, keeping the state LangGraph spreads
// over frames. Bad input is an *adapters.Error (adapters.ErrInbound) with a
// protocol code: INVALID_JSON, DUPLICATE_KEY, INVALID_UTF8, WRONG_TYPE,
// TOO_LARGE, MISSING_FIELD (a frame without data), INVALID_FIELD (not a
// LangGraph shape: ErrNotLangGraph, an SSE line that is no SSE field, an id
// over the envelope's limit).
package langgraph
