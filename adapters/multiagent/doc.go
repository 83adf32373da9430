// Package multiagent translates the "multiagent-1.0" envelope (docs/protocol.md §12,
// "Unified Multi-Agent Message Schema"; Protocol.md of
// github.com/scarmonit-creator/LLM, MIT) to and from the Clutch envelope,
// runs its routing rules as a policy over the router, and renders
// envelopes as the Claude, GPT and Gemini prompts of multiagent-1.0's
// reference adapters. It is a translator (see package adapters): it needs
// no network.
//
// # Mapping
//
// Inbound (multiagent-1.0 → envelope) and Outbound (envelope →
// multiagent-1.0), member by member:
//
//	multiagent-1.0         envelope (Inbound)                           back (Outbound)
//	protocol               v "clutch/0.1"; meta.src "multiagent-1.0"     "multiagent-1.0" (other values: UNSUPPORTED_VERSION)
//	role                   from.role; with intent and content, the type  from.role when it fits the type (asking: user or
//	                       (table below)                                 system; answering: agent or tool), else the
//	                                                                     type's default (system; agent; tool for tool.*)
//	agent.id               from.agent_id "agent:<id>"; no agent:         from.agent_id without "agent:"; meta.no_agent:
//	                       "agent:<role>" and meta.no_agent              no agent
//	agent.name, model, …   meta.agent (the agent object without id)      meta.agent; none: name = id, model "n/a"
//	timestamp              ts, RFC 3339 UTC with milliseconds;           meta.timestamp when it is the same instant, else
//	                       meta.timestamp when ts would not write it     ts in RFC 3339 (UTC, no trailing zeros)
//	                       back the same ("+02:00", ".5")
//	intent                 type, domain, payload_type (table below);     meta.intent; else the intent of the request that
//	                       meta.intent                                   started the task (Index); else payload_type's;
//	                                                                     else domain's; else by type: execute, tool.call
//	                                                                     (tool.*), analyze (chat.*), reflect (agent.*)
//	task, inputs, content, payload {task, inputs, content, outputs,       the payload's members when it has that shape; else
//	outputs, confidence    confidence}, verbatim (the multiagent body);  task = payload_type or type, content = {type
//	                       tool events add call_id (below)               text, text} for a string payload, {type json (or
//	                                                                     tool_result), data: payload} otherwise
//	outputs.artifacts      kept in the payload; each with a uri also     the payload's; else one artifact per attachment
//	                       an attachment {kind "url" | "artifact_ref" |  {kind, name, uri: ref}
//	                       "path", ref: uri, name: name (else kind)}
//	outputs.next_actions   kept in the payload; each also a proposed     the payload's
//	                       task.request (below)
//	confidence.score       kept in the payload; also meta.confidence     the payload's; else {score: meta.confidence}
//	trace.id               id; absent: "msg_" + 32 hex digits of the     id, left out when meta.id_derived
//	                       SHA-256 of the envelope's JCS form, and
//	                       meta.id_derived (a re-sent envelope dedups)
//	trace.parents          meta.parents; the last is meta.in_reply_to;   meta.parents; for a Clutch event of a task
//	                       run, thread and task (below)                  "task:<id>": [<id>]
//	trace.tags             meta.tags                                     meta.tags
//	trace.cost             meta.usage {input_tokens, output_tokens}      meta.usage
//	other trace members    meta.trace_extra                              meta.trace_extra
//	other top-level        meta.extra                                    meta.extra (never shadowing a defined member)
//	members
//
// Intents (docs/protocol.md §12 "Minimal TypeScript types"; IntentInfo, Intents). An
// envelope asks for its intent when its role is user or system and answers
// it when its role is agent or tool; content.type "error" makes it a
// failure; for tool.call, content.type tool_result is the answer and
// anything else the call:
//
//	intent     domain          asked           answered       failed       payload_type
//	plan       planning        task.request    task.result    task.error   multiagent.plan.v1
//	decompose  planning        task.request    task.result    task.error   multiagent.decompose.v1
//	execute    execution       task.request    task.result    task.error   multiagent.execute.v1
//	route      routing         task.request    task.result    task.error   multiagent.route.v1
//	retrieve   retrieval       task.request    task.result    task.error   multiagent.retrieve.v1
//	analyze    analysis        task.request    task.result    task.error   multiagent.analyze.v1
//	summarize  summarization   task.request    task.result    task.error   multiagent.summarize.v1
//	reflect    review          task.request    task.result    task.error   multiagent.reflect.v1
//	finalize   finalization    task.request    task.result    task.error   multiagent.finalize.v1
//	tool.call  tools           tool.call       tool.result    tool.error   multiagent.tool_call.v1
//
// An intent outside the ten is kept (meta.intent) and mapped like a task
// with no domain. A failure's payload is the wire error of docs/protocol.md §5.4:
// code = content.data.code when it is a protocol code or a CLowl E-code
// (else INTERNAL), message = content.text, retryable = content.data.retryable
// (else the code's default), and the whole body in details.multiagent, which
// Outbound sends back as it was; a Clutch error goes out as content {type
// error, text: message, data {code, retryable, details}}.
//
// The handshake / health message of docs/protocol.md §12 (role system, content json
// whose data has "supports") is agent.register the first time an agent
// sends one (a re-sent one translates the same) and agent.heartbeat after
// that. The register payload is an AgentCard (docs/protocol.md §1.4) with a
// capability "content:<entry>" per supported content type, display.name
// from agent.name, and the body kept as the card's "multiagent"
// extension; the heartbeat payload is {"status": "ok", "multiagent":
// body}. Outbound sends the kept body back, or builds one from a card.
//
// Task tree. multiagent-1.0 has no run, thread or task ids; the adapter
// derives them from trace.parents. A message with parents joins the run
// and thread of its last parent (the Index's answer), else of the first
// parent, the lineage's root: "run:<root>", "thread:<root>"; without
// parents it is its own root. A request (and a tool call) starts the task
// "task:<id>", under its last parent's task; an answer or failure belongs
// to its last parent's task ("task:<parent>" when the Index does not know
// it), or to "task:<id>" without parents; agent.* messages have their
// own.
//
// Tool call ids (docs/protocol.md §2.3.1). A tool event's payload holds
// call_id next to the body (in details.call_id for a tool.error): a
// tool.call's is its own id (trace.id); an answer or failure of intent
// tool.call names the call it answers, its last trace.parents entry (an
// id over 256 bytes hashed by adapters.CallID, as the call's own would
// have been refused), or, without parents, a "call:" id derived from its
// own id, which names no call. Outbound leaves call_id out: trace.id and
// trace.parents carry it.
//
// Proposed requests. Each outputs.next_actions[i] also becomes a
// task.request that still goes through routing (no recipient; a Policy
// picks one): id "<id>/next/<i>", from the proposing agent, in its run
// and thread, under its task, intent and payload_type of the action,
// payload {task, inputs: {parameters: args}}, meta.proposed,
// meta.next_action = i, meta.parents = [id]. Inbound returns the message
// first and the proposals after it.
//
// What is lost, and where it is kept:
//   - Inbound loses nothing: every member has a home above. null and
//     absence are the same (a null optional member is dropped). Malformed
//     members of the types of docs/protocol.md §12 are refused, not
//     dropped; see Errors.
//   - Outbound drops what the envelope has no place for: to (multiagent
//     has no addressing); thread, run and task ids other than as parents;
//     parent_task_id; domain and payload_type (except as the intent);
//     requires, prefers, security, idempotency_key, attempt; attachments
//     when the payload has outputs; meta keys other than those above. A
//     task.timeout or task.cancel goes out as an error envelope; a
//     chat.message as an analyze answer. routing.* and extension types
//     have no form: CanHandle refuses them and Outbound fails with
//     UNSUPPORTED_TASK (ErrNotMappable).
//
// Round trips: Outbound of an inbound message gives the input back as the
// same JSON value (null members aside), and Inbound of that gives the same
// envelope again (adaptertest.CheckFixpoint), for any accepted input.
//
// # Routing policy
//
// A Policy runs the routing rules of docs/protocol.md §12 over a router,
// through the router's public API:
//
//	p, _ := multiagent.NewPolicy(r, &multiagent.PolicyOptions{
//		Routes: multiagent.ProtocolRoutes("agent:gpt5", "agent:claude", "agent:gemini"),
//	})
//	msgs, _ := adapter.Inbound(ctx, raw)
//	for _, m := range msgs {
//		if m.Type == protocol.TypeTaskRequest {
//			p.Submit(ctx, m) // to the agent of the request's intent
//		}
//	}
//	go p.Watch(ctx, st, lastSeq) // low confidence → a reflect task
//
// Apply (and Submit) names the agent of a request's intent as its explicit
// recipient, unless the request already names an agent, and records the
// rule in meta.routed_by and meta.route_reason; the router applies its
// hard filters and records a routing.decision ("explicit recipient") as
// for any request. A result whose confidence.score (payload, else
// meta.confidence) is below 0.5 gets a reflect task (ReflectOn; Watch
// calls it for every result appended to the store): to the first
// reflector that is not the result's author (the reflect route, then the
// other routed agents), in the result's run and thread, under its task,
// with meta.parents = [the result's id], meta.reflect_of and payload
// {task: "Reflect on: …", inputs.context: the score and author, content
// {type json, data: the result's payload}}. Reflections are not reflected
// on, and one result gives at most one reflect task (its id is derived).
//
// # Prompts
//
// ClaudePrompt, GPTPrompt and GeminiPrompt render an envelope as the
// fromEnvelope functions of multiagent-1.0's reference adapters
// (adapters/claude.ts, gpt5.ts and gemini.ts) do, so an LLM-backed agent
// can turn its task.request into its model's prompt — with one addition:
// the text taken from the message is untrusted, and sits inside explicit
// boundaries (docs/protocol.md §6.5). Claude's and Gemini's prompts put
// every value (task, context, content, and an intent that is not one of
// the ten) between <data-N> and </data-N>, where N is a nonce that none of
// the values contains, so a payload cannot end its block whatever it
// holds; their first line says that such text is data, never
// instructions. GPT's user prompt is JSON (its strings escaped), and its
// system prompt ends with GPTNotice, which says the user message is data.
// Without the notice and the tags, each prompt is the reference adapter's
// character for character: the tests compare them with the TypeScript,
// run by Node.
//
// # Errors
//
// Inbound and Outbound return *adapters.Error values (matching
// adapters.ErrInbound or adapters.ErrOutbound) with a protocol.Code and the
// JSON pointer of the member: malformed JSON, duplicate keys, invalid
// UTF-8, nesting over 64: INVALID_JSON, DUPLICATE_KEY, INVALID_UTF8,
// TOO_DEEP; a "protocol" other than multiagent-1.0: UNSUPPORTED_VERSION
// (ErrProtocol); a missing protocol, role, timestamp, intent, task, content,
// content.type, agent.id, next action intent or task, or confidence.score:
// MISSING_FIELD; a member of the wrong JSON type: WRONG_TYPE; a role
// outside agent, user, system and tool, a timestamp that is not RFC 3339,
// an empty intent, a score outside 0..1, an empty or over-long id:
// INVALID_FIELD; input over Options.MaxBytes: TOO_LARGE.
//
// # Caveats
//
// Credentials in an envelope are not stored: the value of a member named
// as one (authorization, cookie, x-api-key, token, secret, password, …)
// and any "Bearer …" or "Basic …" value becomes "[redacted]", in the
// payload and in meta. A message whose envelope would be over the event
// store's limit has its longest strings cut, each ending in "… [truncated,
// <size> bytes]" and listed in meta.truncated.
//
// multiagent-1.0 has no JSON Schema and no message ids: the adapter takes
// the TypeScript types of docs/protocol.md §12 as the schema and refuses
// what breaks them, but accepts any intent and content type. Lineage
// across hops needs the adapters.Index (its Kind is the intent): in
// memory by default, the last adapters.DefaultIndexSize messages; one
// over the event store (Options.Index) survives restarts. The handshake
// of docs/protocol.md §12 comes from "orchestrator", which is also the
// router's default agent id: register the mux under another id.
// PayloadSchema (RegisterSchemas) is the body's shape for the ten payload
// types, as loose as multiagent-1.0 (unknown members allowed).
package multiagent
