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
// Tool call ids (docs/protocol.md §2.3.1). A tool.call and its tool.result
// or tool.error carry LangGraph's id of the call as call_id: the AI
// message's tool_calls[i].id and the tool message's tool_call_id, an
// events record's run_id (of the tool's run), a protocol tools event's
// tool_call_id; an id too long to keep is replaced by adapters.CallID of
// it, the same for the call and its outcome. A call LangGraph gives no id
// (the astream_events records of LangChain's own tests blank run_id) gets
// one derived from the run and the frame, and an outcome without an id
// answers the oldest call of the same Stream that had none, is not
// answered and has the same tool name; with none, its id names no call.
// A call has one outcome: a tool message reported again, by another
// stream mode or in a frame translated by a later Inbound call (the
// Translator remembers the latest 8192 answered calls), is kept as
// task.progress langgraph.message.v1.
//
// An interrupt is reported as task.error INPUT_REQUIRED (not an extension
// event): it is the code of "the agent needs input" (a task that waits for
// an answer resolves its handle with it too), and the interrupt ids stay
// in meta and details. The bridge does not end a task with it: the task
// asks (see "Bridge"). Every form is one: a
// dynamic interrupt (reported once, in the task of its namespace, however
// many frames repeat it), a static breakpoint (an empty __interrupt__
// list: details.interrupts [] and details.static), and one inside a
// subgraph (the run's task asks too when the end frame comes). After an
// interrupt the end frame is x.langgraph.end, never a task.result.
//
// Each task gets one task.request per Stream and one terminal event
// (task.result, task.error, task.cancel, task.timeout) per attempt,
// whatever the stream modes: the tasks and debug modes report the same
// node task, and a repeat is kept as task.progress (langgraph.task.v1).
// The Translator remembers the latest 8192 task attempts (run, task,
// attempt) that ended, across its Streams and Inbound calls, so a stream
// fed one frame per call ends each task once too.
//
// # Sizes and credentials
//
// Every envelope fits the event store (protocol.DefaultMaxBytes encoded):
// error text is kept once (the message; details never repeat it), and a
// message or a string in error details over 16 KiB is cut, ending in
// "… [truncated: <n> bytes in all]"; a payload that would still not fit
// (state near the input limit, or repeated by the end frame's result) is
// replaced by {"truncated": true, "bytes", "sha256"} of what it was (for
// an error, its details are); text outside the payload (a huge event or
// node name in meta) is then cut as every adapter cuts it, listed in
// meta.truncated. meta.lg_mode is kept only for a mode name of at most
// 64 bytes. A LangGraph id that would make an envelope
// id too long is refused with INVALID_FIELD rather than shortened: a
// checkpoint id whose idempotency key "lg-checkpoint:<id>" would pass 256
// bytes, and run, thread or task ids over the limit.
//
// Credentials never reach the store, in payload, details or meta, in any
// status or path (the bridge's x.langgraph.invalid_frame too): the values
// of keys naming a credential (authorization, cookie, x-api-key,
// proxy-authorization, set-cookie, any key holding api_key, api-key,
// apikey, secret or password, or ending in token or cookie) and any
// "Bearer …"/"Basic …" string become "[redacted]".
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
// x-api-key, …) are replaced by "[redacted]" before anything is stored
// (see "Sizes and credentials"). The
// timestamp is the record's own when it has one (debug timestamp, protocol
// timestamp, run updated_at), else the translation time. A lone record that
// names no run lands in the run "run:langgraph" with meta.lg_no_run; use a
// Stream with a Scope to place records of one live run.
//
// # Bridge
//
// Register (or NewRemote + router.Attach) makes a graph served by an Agent
// Server a Clutch agent. Each routed task.request:
//
//   - finds the Agent Server thread of its Clutch thread: POST /threads with
//     a thread_id derived from the assistant and the Clutch thread
//     (Remote.ThreadID) and if_exists "do_nothing", so the mapping survives
//     restarts and needs no table;
//   - becomes a run: POST /threads/{id}/runs/stream with the stream modes
//     of RemoteOptions.StreamModes, stream_resumable, on_disconnect "cancel"
//     and the graph input (RemoteOptions.Input), or the resume of a thread
//     that waits (below);
//   - is streamed: every frame is translated (the mapping above) and lands
//     under the task through router.Task.Emit — tool.call, tool.result,
//     tool.error, chat.message and x.langgraph.* as they are, the rest (run
//     and node lifecycle, state, updates, checkpoints, handoffs) as
//     task.progress with the langgraph.*.v1 payload types; a frame the
//     translator refuses is kept as x.langgraph.invalid_frame;
//   - ends: an error frame ends it with TOOL_FAILED and the server's
//     message; a run that stopped for input asks (below); otherwise the
//     final state (the last values frame, else the thread state's values)
//     gives task.result, mapped by RemoteOptions.Result and typed
//     RemoteOptions.ResultType; a cancelled task cancels the run
//     (POST /threads/{id}/runs/{run}/cancel).
//
// A LangGraph interrupt is a question in the Clutch task (router.Task.Ask,
// docs/protocol.md §2.7). A run stops for input when any node task at any
// depth (a subgraph's too) called interrupt(), at a static breakpoint
// (interruptBefore/After), or when the thread's state (GET
// /threads/{id}/state, read at the end of every run) still names nodes to
// run (next). The task then stores a task.question and waits, holding no
// goroutine: its handle resolves with the question (Outcome.Question,
// INPUT_REQUIRED), the graph stays interrupted on its thread. The question
// is made of the thread state's pending interrupts (else the stream's):
//
//   - text: each interrupt value's text, one a line — a string as it is, or
//     an object's "question", "message" or "description" string member;
//     without any, "LangGraph run paused before <next>: answer to
//     continue" (at most protocol.MaxQuestionText bytes);
//   - a lone interrupt whose value is an object with "choices" (strings)
//     or "schema" (a JSON Schema object) gives the question those, so only
//     such an answer is taken (a schema needs a router Validator that
//     checks values, as *schema.Registry; invalid choices or schema are
//     left out);
//   - details: "interrupts" (each once, {id, value}, credentials redacted
//     and values bounded), "langgraph_next", "langgraph_thread_id",
//     "langgraph_run_id" (when known) and "langgraph_checkpoint_id"; who
//     may answer is the task's requester, and there is no deadline.
//
// router.Router.Answer runs the task again; Handle calls
// router.Task.Resumed first, and when the last answered question names
// the task's LangGraph thread:
//
//   - the thread still waits on what the question asked (the same pending
//     interrupt ids; at a static breakpoint, the same checkpoint): the run
//     is `command: {resume: …}` on that thread. For one interrupt (or a
//     breakpoint) the resume value is the answer's value as it is. For
//     several (parallel branches), an answer that is an object whose keys
//     are interrupt ids of the question is LangGraph's resume map as it
//     is (a value per interrupt; interrupts it leaves out are asked
//     again); any other answer is given to each interrupt
//     ({id: value, …});
//   - the thread waits on other interrupts (the answer went in before a
//     restart and the graph stopped again): the task asks about those,
//     without a run;
//   - the thread waits for nothing (the answer went in and the run ended
//     before a restart): nothing runs again, the thread state's values are
//     the result; a thread whose last run failed fails the task with
//     TOOL_FAILED;
//   - a thread busy with a run (the one that took the answer, or one that
//     ended a moment ago: the JS server marks the thread after the run's
//     stream ends) is first polled every RemoteOptions.PollInterval until
//     it is not, or the task's context ends.
//
// Without such an answer (a first attempt, or a question about another
// thread) the request is the graph's input, or the answer of a thread
// that waits (below).
//
// A resume run cancelled with its connection (a process that stopped
// mid-run) leaves the interrupt pending, so the answer resumes the graph
// again after a restart; router.Router.Recover leaves a waiting task
// waiting, and the thread id in the question finds the graph again. Each
// answer is one more attempt of the same task, and the next interrupt the
// same task's next question.
//
// A task that cannot ask ends as before questions: a subtask (its parent
// holds it while it delegates; router.Task.Ask refuses) ends with
// INPUT_REQUIRED, the question's text as message and its details (plus
// "not_asked", why), and so does a question the router refuses. A new
// task.request on a Clutch thread whose LangGraph thread waits — its
// question cancelled or timed out, or nobody asked — is the answer: the
// run resumes the graph with command {resume: …} (RemoteOptions.Resume).
//
// A stream that ends while the run is still pending or running (a dropped
// connection) is re-joined with GET /threads/{id}/runs/{run}/stream and
// Last-Event-ID, up to RemoteOptions.MaxRejoins times, then the run is
// polled; frame-derived message ids make a repeated frame harmless.
// Errors follow docs/protocol.md §5.4: HTTP 5xx and unreachable servers →
// TOOL_UNAVAILABLE (retryable), timeouts → TIMEOUT (retryable), 429 →
// RATE_LIMITED, 409 (thread busy) → CONFLICT (retryable), 401/403 →
// UNAUTHORIZED, 404 → NOT_FOUND, 400/422 → INVALID_FIELD, a refused
// destination → POLICY_DENIED; a run that ends in status error or timeout
// → TOOL_FAILED / TIMEOUT. The JS server answers a run on a busy thread
// with 422 "Thread is already running a task": CONFLICT (retryable), as a
// 409. Every request dials through RemoteOptions.Egress
// (egress.Policy.Client); RemoteOptions.APIKey is sent as x-api-key.
//
// Caveats: router.Task.Emit sets the task, sender and attempt and carries
// no meta, so in the bridge the LangGraph ids travel in the payloads (tool
// call ids, message ids, task ids and names of node tasks), not in meta as
// with Translator. The LangGraph.js server 2.0.0 cannot stream values with
// subgraphs (RemoteOptions.Subgraphs leaves values out and reads the state
// instead), reports an interrupted run as status "success", and lists in
// a Thread object the interrupts of node tasks an answer already resumed;
// the bridge goes by the stream's interrupts and the thread's state (whose
// tasks carry their result). Tested against
// the LangGraph.js Agent Server (langgraphjs dev) from npm; the hosted
// Python server is inferred to speak the same API.
//
// # Input, state and errors
//
// Translator.Inbound takes an SSE stream, a JSON record, a JSON array of
// records or JSON lines (one value or several is decided by where the
// values end, not by the layout: a pretty-printed record is one record,
// and its refusal has the code of its one-line form); the records of one
// input are one stream. Translator.Detect recognises every shape Inbound
// takes by the top-level members of the first record. Stream
// translates a live run frame by frame, keeping the state LangGraph spreads
// over frames. Bad input is an *adapters.Error (adapters.ErrInbound) with a
// protocol code: INVALID_JSON, DUPLICATE_KEY, INVALID_UTF8, WRONG_TYPE,
// TOO_LARGE, MISSING_FIELD (a frame without data), INVALID_FIELD (not a
// LangGraph shape: ErrNotLangGraph, an SSE line that is no SSE field, an id
// over the envelope's limit, a checkpoint id too long for its
// idempotency key).
package langgraph
