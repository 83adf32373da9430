// Package crewai connects crewAI (github.com/crewAIInc/crewAI) to Clutch:
// a translator (Adapter) for what crewAI emits — its event bus in the
// to_json() form, the tracing batches, the AMP (deployed crew) webhook
// deliveries, the AMP kickoff/status/resume bodies and Crew(stream=True)
// chunks — and a bridge (Crew, Register) that makes a crew deployed on AMP
// a Clutch agent (docs/protocol.md §7.1).
//
// # Mapping
//
// Inbound (crewAI → envelope), per crewAI event type:
//
//	crewAI event (type)                  envelope                        task; notes
//	crew_kickoff_started, flow_started   task.request                    the run's root task; payload = inputs (null
//	                                                                     when absent or null)
//	crew_kickoff_completed, flow_finished task.result                    root; payload = output.raw (else output / result);
//	                                                                     output's other members meta.crewai_output,
//	                                                                     total_tokens meta.usage
//	crew_kickoff_failed, flow_failed     task.error                      root; the error table below
//	task_started                         task.request                    "task:<task_id>", parent the root; to = the agent
//	                                                                     of agent_role; payload {description,
//	                                                                     expected_output, context, name} (the name
//	                                                                     only there, not in meta)
//	task_completed                       task.result                     that task; payload = output_raw
//	task_failed                          task.error                      that task
//	task_completed / task_failed naming  task.progress                   root; {event, output | error}: the crew's own
//	  no task, none running                                              end is crew_kickoff_completed / _failed
//	agent_execution_started (lite_…)     task.accept                     the running task; from = the agent
//	agent_execution_completed / _error   task.progress                   {event, data} (task_completed / _failed end it)
//	tool_usage_started                   tool.call                       {tool: "crewai[:<tool_class>]", name, args,
//	                                                                     call_id = event id}; tool_args, a JSON string
//	                                                                     there, is parsed
//	tool_usage_finished                  tool.result | tool.error        {tool, name, call_id, content = output}; a
//	                                                                     failure member makes it tool.error
//	tool_usage_error, tool_execution_error,                              tool.error with TOOL_FAILED, INVALID_FIELD
//	tool_validate_input_error,                                           (validate) or TOOL_NOT_FOUND (selection);
//	tool_selection_error                                                 details {name, call_id, args}
//	                                                                     call_id (docs/protocol.md §2.3.1): the call's
//	                                                                     started_event_id; without one, the latest open
//	                                                                     call of that tool name in the run; else the
//	                                                                     outcome's own event id (it names no call)
//	"Delegate work to coworker",         tool.call + task.request        delegation: a subtask "task:<call event id>",
//	"Ask question to coworker" calls                                     parent the delegating task, to the coworker
//	                                                                     (tool_args.coworker); the coworker's events land
//	                                                                     in it (crewAI's internal task id is bound to it);
//	                                                                     the tool's answer is also the subtask's
//	                                                                     task.result (or task.error)
//	llm_call_started/_completed/_failed, x.crewai.llm_call (TypeLLMCall) the running task; payload = the event data
//	llm_stream_chunk, llm_thinking_chunk                                 (model, messages, response, call_id, …);
//	                                                                     meta.crewai_type tells which; usage meta.usage
//	method_execution_*, memory_*,        task.progress                   {event, data[, awaiting_input: true]}
//	knowledge_*, agent_reasoning_*,
//	llm_guardrail_*, flow_paused,
//	flow_input_requested, human_feedback*,
//	conversation_message_added, …
//	any other type                       x.crewai.<kind>                 the data as payload; counted (Adapter.Unknown)
//
// And per body:
//
//	crewAI body                                   envelope
//	tracing batch {events: [{event_id,            one per event (table above); trace_id (the host adds the one of
//	  timestamp, type, event_data}],              the URL) is the run; without it, the run an earlier batch's
//	  batch_metadata}                             crewAI task ids landed in, else the first event's id;
//	                                              batch_metadata meta.crewai_batch of the first
//	AMP webhook {events: [{id, execution_id,      one per event; the run is execution_id; sorted by
//	  timestamp, type, data}]}                    emission_sequence, else by timestamp (AMP does not order)
//	one event (its to_json(), with event_id)      as a batch of one
//	tracing open {trace_id, execution_type, …}    x.crewai.trace_batch_started (payload = the body)
//	tracing finalize {status, duration_ms,        x.crewai.trace_batch_finalized; needs trace_id (from the URL)
//	  final_event_count}
//	POST /kickoff {inputs, meta, …}               task.request to "agent:crewai" from CallerAgent; payload =
//	                                              inputs, meta meta.crewai_meta, the rest meta.crewai_extra; the
//	                                              run is kickoff_id (the host adds it), else derived from the
//	                                              body (meta.id_derived)
//	{kickoff_id}                                  task.accept of the run's root task
//	{error, message} + kickoff_id (AMP's error    task.error of the run's root task: NOT_FOUND when the text says
//	  answer, e.g. a status poll's 404)           "not found", else as ErrorCode reads it (meta.crewai_type
//	                                              amp_error)
//	GET /status {status, …} + kickoff_id          running (and any other state): task.progress {status,
//	                                              current_task, progress}; completed: task.result (result.output;
//	                                              tasks meta.crewai_tasks); error: task.error
//	POST /resume {execution_id, task_id,          task.request under the root task, payload {human_feedback,
//	  human_feedback, is_approve}                 is_approve}, meta.crewai_task_id
//	{status: resumed|retrying, message}           task.progress
//	StreamChunk                                   chat.message {text, partial: true} or, for a tool_call chunk,
//	                                              tool.call {…, partial: true}; call_id = tool_call.tool_id, else
//	                                              "call:<hash>" of the run, task_id and tool_call.index, the same
//	                                              for every piece of the call (adapters.CallID)
//
// Ids. An event's id is its event_id (id); a second envelope of one event
// adds "/delegate" or "/result". A crewAI run x (trace, kickoff or
// execution id) is run "run:x", thread "thread:x" and root task "task:x";
// a crewAI task id t is "task:t"; ts is the event's timestamp in UTC
// (a naive time is taken as UTC; the text as sent is in meta.crewai_timestamp
// when it differs). A crewAI agent role r sends as "agent:crewai:<slug r>"
// with from.role r; the crew as "agent:crewai:crew:<slug crew_name>". The
// crewAI ids are kept in meta (crewai_event_id, crewai_execution_id,
// crewai_task_id, crewai_task_name, crewai_agent_id, and crewai_links for
// parent_event_id, previous_event_id, started_event_id,
// triggered_by_event_id, emission_sequence), and meta.src is "crewai".
// The Index (Options.Index) remembers where each crewAI task id and tool
// call landed and what a run has open (the running task, unanswered tool
// calls and delegations), so a later batch of the run finds its task.
//
// One end a task. Every task gets at most one terminal event, in any
// trace order and across batches of the run (the Index remembers which
// tasks ended): a second end of a task (a repeated task_completed, an end
// after the crew's) becomes task.progress {event, ended: true, data}.
//
// Size and credentials. An event of any size up to Options.MaxBytes gives
// envelopes the event store can hold: text is in one place of an envelope,
// and when an envelope would still be over the store's limit its longest
// strings are cut to one length, each ending in "… [truncated, <size>
// bytes]", and listed in meta.truncated ({path, bytes}); an event whose
// size is not text is refused with TOO_LARGE. The translator has no
// artifact store at hand, so it cuts rather than stores aside. Credentials
// are never stored: the value of any member named as one (authorization,
// cookie, x-api-key, token — the kickoff's webhooks.authentication.token
// —, secret, password, …) and any "Bearer …" or "Basic …" value becomes
// "[redacted]", in the payload and in meta.
//
// Outbound (envelope → crewAI): a task.request becomes the body of POST
// /kickoff ({inputs: KickoffInputs, meta: meta.crewai_meta}) or, for a
// resume (meta.crewai_type "amp_resume", or crewai_execution_id and
// crewai_task_id set), of POST /resume (ResumeOf). Every other type has no
// crewAI form: ErrNotMappable, and CanHandle refuses it.
//
// What is lost, and where it is kept:
//   - Inbound drops the members holding Python object dumps (agent, crew,
//     callbacks, from_task, from_agent, task, tools_handler: reprs with
//     memory addresses), naming them in meta.crewai_dropped, and a null
//     source_fingerprint, source_type or fingerprint_metadata. Every other
//     member has a place: the payload, the meta keys above, or
//     meta.crewai_extra (members the mapping has no field for, and unknown
//     members of the wrappers).
//   - Outbound keeps only what a kickoff or resume can carry: the inputs and
//     meta; everything else of the envelope stays in Clutch.
//   - There is no round trip: crewAI's events are not something Clutch sends
//     back (Outbound makes requests, not events).
//
// # The bridge
//
// Register (or NewCrew, for router.Attach) takes the crew's URL and its
// AMP bearer token and registers a Clutch agent whose handler runs each
// task as a kickoff:
//
//	crew, err := crewai.Register(ctx, r, "https://my-crew.crewai.com", &crewai.CrewOptions{
//		BearerToken: os.Getenv("CREW_TOKEN"),
//		WebhookURL:  "https://me.example.com/crewai/events", // optional
//	})
//	h, _ := crew.WebhookHandler(nil) // mount at WebhookURL
//
// A task.request becomes POST /kickoff with inputs = CrewOptions.Inputs of
// the request (KickoffInputs: an object payload is the inputs, a string s
// {"input": s}) and meta {clutch_task_id, clutch_run_id}. The execution is
// then followed by GET /status/{kickoff_id} every PollInterval — a changed
// status is a task.progress (CrewProgress), completed is the task.result
// (result.output, as CrewOptions.ResultType), error a task.error — and,
// with WebhookURL, by the event stream AMP posts there: the kickoff asks
// for it (webhooks {events, url, realtime, authentication {strategy
// "bearer", token}}) with a random token of the Crew, which
// WebhookHandler requires (auth.APIKeys behind an auth.Guard). Streamed
// tool events are stored as tool.*, LLM calls as x.crewai.llm_call, others
// as task.progress, each once (AMP retries deliveries); the crew's end
// ends the task.
//
// Human input (docs/protocol.md §2.7): when the execution pauses for a
// person — a streamed flow_input_requested, human_feedback_requested,
// flow_paused or method_execution_paused event, or a status naming a
// pause (AwaitingInput) — the task asks an approval question
// (router.Task.Ask) and waits, holding no goroutine. Its text is the
// event's message (with the output to review, when the event has one) or
// the status's message; its Details name the paused work: crew (the
// crew's URL), kickoff_id, crew_task (the crewAI task id, else its name or
// the flow method) and event_id (the streamed event, when one said so).
// The question is stored with the task, so it outlives the process. When
// it is answered, the router runs Handle again: it calls
// router.Task.Resumed first and, finding its question answered, resumes
// that execution — POST /resume with ResumeOfApproval of the answer:
// approve is is_approve true, reject and edit are is_approve false (AMP
// retries the task), the reason (and an edit's arguments) the
// human_feedback — and follows it again, instead of kicking off. A later
// pause asks a new question of the same task. A resume refused because
// the execution is not paused (HTTP 400/409 "not in pending human input
// state") is taken as one an earlier run sent before its process died:
// the execution is followed as it is. A subtask cannot ask: a pause ends
// it with INPUT_REQUIRED and the same details, for the task that
// delegated it to handle; nothing resumes that execution later. A new
// task.request in the thread is a new kickoff: the answer is the one way
// to resume. The webhook stream is followed from before the resume, and
// a late redelivery of the pause event is not a new pause.
//
// Every connection dials through CrewOptions.Egress (egress.Default():
// public addresses only) at the card's network level.
//
// # Errors
//
// Translator errors are *adapters.Error (ErrInbound, ErrOutbound) with the
// JSON pointer of the member: malformed JSON, duplicate keys, invalid
// UTF-8, deep nesting: INVALID_JSON, DUPLICATE_KEY, INVALID_UTF8, TOO_DEEP;
// over Options.MaxBytes: TOO_LARGE; none of the shapes above:
// INVALID_FIELD (ErrShape); a missing event id, type or timestamp, status
// kickoff_id, resume ids or is_approve: MISSING_FIELD; a member of the
// wrong JSON type: WRONG_TYPE; a timestamp that is not ISO 8601, an id over
// 200 bytes: INVALID_FIELD.
//
// crewAI failures carry only text; ErrorCode maps it to the error table of
// docs/protocol.md §5.4: a timeout → TIMEOUT, a rate limit → RATE_LIMITED,
// an API key or authentication failure → UNAUTHORIZED, a tool not found →
// TOOL_NOT_FOUND, anything else TOOL_FAILED (not retryable). Only a text
// whose "not found" has a tool as its subject is TOOL_NOT_FOUND: "coworker
// mentioned not found" is the delegation tool failing on its argument, so
// a tool_usage_error saying it stays TOOL_FAILED, as the table maps
// tool_usage_error; tool_selection_error is TOOL_NOT_FOUND whatever it says.
//
// The bridge's calls fail as wire errors: the egress policy refuses →
// POLICY_DENIED; HTTP 400 → INVALID_FIELD, 422 (missing inputs) →
// VALIDATION, 401/403 → UNAUTHORIZED, 404 → NOT_FOUND, 409 → CONFLICT, 429
// → RATE_LIMITED, 5xx → TOOL_UNAVAILABLE (retryable), no answer within
// RequestTimeout → TIMEOUT, unreachable → TOOL_UNAVAILABLE (retryable),
// an answer over MaxResponseBytes → TOO_LARGE, one that is not AMP's JSON
// → TOOL_FAILED; AMP's own {error, message} is kept in the message. A
// status call failing MaxPollFailures times in a row with a retryable
// error ends the task with it, so the router retries it with a new
// kickoff; a non-retryable one ends it at once.
// NewCrew's option errors match ErrOptions (INVALID_FIELD); an egress
// refusal of the crew's URL ErrPolicy (POLICY_DENIED).
//
// # Caveats
//
// No crewAI runs on the machines this package is tested on: the translator
// is tested with recorded crewAI payloads (tracing request bodies from
// crewAI's VCR cassettes, the AMP OpenAPI examples, the AMP webhook
// documentation's delivery) and the bridge against a small fake AMP server
// in the tests that answers with exactly those recorded shapes. The
// fixtures and their sources are in testdata.
//
// AMP has no cancel call: when a task is cancelled or times out — a
// waiting task too, or one whose question passes its deadline — the bridge
// stops following the execution, and the crew's own run goes on (a paused
// one stays paused). The API documents no status for an execution paused
// for human input; AwaitingInput is this package's reading, as is the
// text of the 400 that says a resume was taken already. AMP wants the
// kickoff's webhook URLs again on /resume and documents only the legacy
// taskWebhookUrl/stepWebhookUrl/crewWebhookUrl there, not the webhooks
// object a kickoff streams with: the resume does not send it, and status
// polling follows the resumed execution (its stream goes on only if AMP
// keeps it). Should the execution pause again before a crashed run's
// resume is sent again, AMP decides what that resume does. Status and finalize bodies do not carry their
// id (it is in the URL): the host adds kickoff_id or trace_id to them. Old
// recordings (crewAI 0.201) leave the task and agent ids out of some
// events; those join the running task. Stream chunks carry no id: each gets
// a new one, in the run their task id landed in ("run:crewai-stream" when
// unknown). An Index over the event store that does not keep Remember's
// links loses what a run had open between batches and which tasks ended:
// its events still land in the run through their task ids, but a
// delegation split across batches is not paired, and a task ended in an
// earlier batch can end again.
package crewai
