// Package clowl translates CLowl v0.2 (docs/protocol.md §14; github.com/oscarsterling/clowl,
// MIT) to and from the Clutch envelope. CLowl is a message language for
// agent-to-agent traffic with ten performatives; the adapter is a
// translator (see package adapters) and needs no network.
//
// # Mapping
//
// Inbound (CLowl → envelope) and Outbound (envelope → CLowl), member by
// member:
//
//	CLowl        envelope (Inbound)                                  back (Outbound)
//	clowl "0.2"  v "clutch/0.1"; meta.src "clowl/0.2"                 "0.2" (other versions refused: E014, §8)
//	mid          id, verbatim (dedup depends on it)                    id; more than 128 bytes is refused
//	ts           ts, RFC 3339 UTC with milliseconds (.000)             Unix seconds: milliseconds are dropped
//	tid          run_id; absent: "run:<cid>"                           run_id, left out when it is "run:<thread_id>"
//	pid          meta.in_reply_to                                      meta.in_reply_to; for a Clutch event of a task
//	                                                                   "task:<mid>" (started by a CLowl REQ): <mid>
//	p            type and task_id (table below); meta.performative     from type; meta.performative where it still fits
//	from         from.agent_id "agent:<from>"                          from.agent_id without "agent:"
//	to           to[]: "agent:<id>" each; "*" → "group:*";             the same way back; an empty to (the router
//	             an array of one also sets meta.to_list                chooses) becomes "*"
//	cid          thread_id                                             thread_id
//	body.t       meta.task_type                                        meta.task_type; for a Clutch event of a task
//	                                                                   "task:<mid>", the body.t of that REQ (Index);
//	                                                                   else domain, else payload_type without its
//	                                                                   version, else "task" ("error" for ERR,
//	                                                                   "capabilities" for CAPS, "message" for INF/QRY)
//	body.d       payload (table below)                                 payload (table below)
//	ctx.ref      attachments[0] {kind, ref, name "ctx", sha256}:       the attachment named "ctx", else the first
//	             kind "artifact_ref" (artifact:…), "url" (…://…),
//	             else "path"
//	ctx.hash     that attachment's sha256; without a ref: meta.ctx_hash the attachment's sha256 (dropped unless 64 hex digits)
//	ctx.inline   meta.ctx_inline                                       meta.ctx_inline
//	auth         security.auth {scheme "bearer", sig: the token}       security.auth.sig when the scheme is "bearer"
//	det          meta.det                                              meta.det
//	(lenient)    meta.coercions: the repairs made (Coercion objects)   -
//
// Performatives (docs/protocol.md §14.3). A REQ or a DLGT starts the task
// "task:<mid>"; every other message belongs to the task of the message it
// answers: the Index's answer for its pid, else "task:<pid>" (the task a
// REQ with that mid started), else, without a pid, "task:<mid>".
//
//	p     type                          payload                                              back from
//	REQ   task.request                  body.d                                               task.request
//	DLGT  task.request, parent_task_id  body.d; meta.delegation_mode                         task.request with meta.performative DLGT,
//	      = the task of pid                                                                  or with a parent_task_id (mode: meta, the
//	                                                                                         payload's, else "assist")
//	ACK   task.accept                   body.d                                               task.accept
//	PROG  task.progress                 body.d (the schema's progress_partial)               task.progress
//	DONE  task.result                   body.d                                               task.result
//	ERR   task.error                    {code, message, retryable, details} (docs/protocol.md §5.4): task.error, task.timeout
//	                                    code through the protocol error table
//	                                    (ProtocolCode; details.clowl_code keeps
//	                                    a code the table does not give back, such as E900),
//	                                    msg → message, retry → retryable (absent: the
//	                                    code's default), other members (cascade_err) →
//	                                    details
//	CNCL  task.cancel                   {code CANCELLED, message: reason, details: the rest}  task.cancel
//	                                    (the payload of the router's own task.cancel)
//	INF   chat.message                  body.d                                               chat.message, chat.system
//	QRY   chat.message                  body.d; meta.performative QRY                        chat.message with meta.performative QRY
//	CAPS  agent.register (the agent's   an AgentCard (docs/protocol.md §1.4): each "supports" entry   agent.register, agent.update: the card's
//	      first CAPS), agent.update     a capability (CapabilityID), body.d verbatim in the  "clowl" extension when it lists the same
//	      (a later one)                 card's "clowl" extension                             capabilities, else {supports, clowl "0.2"}
//
// Outbound writes ERR bodies with code, msg and retry (error-codes.md
// requires all three), the CLowl code of the payload's code
// (CodeFor), and "clutch_code" when the CLowl code alone would
// not give the exact Clutch code back; Inbound reads clutch_code back.
//
// What is lost, and where it is kept:
//   - Inbound loses nothing: every member has a home above. CLowl gives
//     null and absence the same meaning, and so does the adapter (pid null,
//     ctx members null or ""); a ctx with nothing in it is dropped.
//   - Outbound drops what CLowl has no place for: the milliseconds of ts; trace;
//     domain, payload_type and schema_ref (except as body.t); requires and
//     prefers; attachments other than the ctx one; security.policy and
//     signatures; idempotency_key; attempt; the parent_task_id of a
//     delegation (CLowl links messages by pid only); meta keys other than
//     those above; the difference between chat.system and chat.message and
//     between task.timeout and task.error (both ERR: E006 for a timeout);
//     and the group: prefix of recipients other than group:*. A payload that
//     is not an object is sent as {"value": payload} (null as {}).
//   - tool.*, routing.*, agent.heartbeat and extension types have no
//     performative: CanHandle refuses them and Outbound fails with
//     UNSUPPORTED_TASK (ErrNotMappable).
//
// Round trips: Outbound of an inbound message gives the input back as the
// same JSON value (null and absent members aside), and Inbound of that
// gives the same envelope again (adaptertest.CheckFixpoint), for any
// accepted input.
//
// # Validation: strict and lenient
//
// Strict (the default, Parse): the input must be JSON the event store
// accepts (protocol's strict scanner: no duplicate keys, valid UTF-8, at
// most 64 levels, at most Options.MaxBytes), of version "0.2", and valid
// against the CLowl v0.2 JSON Schema, embedded (SchemaJSON) and compiled
// by the module's schema package into a registry of its own (it is a wire
// format, not a payload type). The schema refuses unknown members, needs
// delegation_mode on a DLGT and checks a PROG body against
// progress_partial.
//
// Lenient (Options.Lenient, ParseLenient) follows the CLowl SDKs' lenient
// parsers: unknown members are ignored (and reported in meta.coercions, so
// they do not vanish), a missing mid is generated (deterministic: a re-sent
// message gets the same mid and dedups), and values of the wrong form are
// coerced where the SDKs coerce them; the repaired message must then pass
// the schema. One divergence: a version other than "0.2" is refused in
// both modes (docs/protocol.md §14.8: mismatch → E014), where the SDKs' lenient
// parsers coerce it.
//
// # Context references
//
// ctx.ref is preferred and ctx.inline is the degraded path (docs/protocol.md §14.5).
// With Options.Resolve nil, refs are not resolved: the attachment carries
// ref and hash for the recipient to check. With a Resolver, the content of
// the ref is fetched: when ctx.hash is set it must match (else the message
// is refused: CONTEXT_UNAVAILABLE, E003, ErrHashMismatch); an unreachable
// ref is refused the same way when ctx.inline is null (ErrContextUnreachable)
// and otherwise passes with meta.ctx_fallback = true, so monitoring can flag
// it. A hash without a ref is checked against ctx.inline. A Resolver
// returning ErrSkip leaves a ref unresolved. Artifact refs of the event
// store resolve through store.Store.GetArtifact.
//
// # Delegation
//
// A DLGT becomes a task.request with its delegation_mode in meta and, when
// it has a pid, a parent_task_id. Delegate honours the three modes for a Clutch
// agent that delegates through the router, and marks the subtask so that
// Outbound sends it as a DLGT with that mode:
//
//	transfer  full handoff: the handler waits and returns the subtask's
//	          outcome as its own (Delegation.Result)
//	fork      parallel work: Delegate returns at once; the handler goes on
//	assist    helper: the handler waits, folds the outcome into its own
//	          result and stays accountable (what router.Task.Delegate is)
//
// A task.request with a parent_task_id and no mode goes out as a DLGT in
// assist mode: a Clutch subtask's parent waits for it and stays
// accountable.
//
// # English translation
//
// Every message has a deterministic English translation (docs/protocol.md §14.1):
// Message.English, Translate (CLowl bytes) and EnglishOf (an envelope, as
// Outbound would send it). The same message always gives the same
// sentence: times are UTC, objects are written in their JCS form (RFC
// 8785, members sorted). The sentence is
//
//	[<YYYY-MM-DD hh:mm:ss> UTC] [<tid>] <from> → <to>: <NAME> <detail><ctx><det><pid><auth>
//
// with "[<tid>] " only when there is a tid; <to> is the recipient, or
// "[a, b]" for an array; <NAME> the performative's name (REQUEST, INFORM,
// ACKNOWLEDGE, ERROR, DELEGATE, COMPLETE, CANCEL, QUERY, PROGRESS,
// CAPABILITIES); <detail> by performative:
//
//	REQ, INF, ACK, DONE, QRY  <t><data>
//	DLGT                      <t> [<delegation_mode>]<data without delegation_mode>
//	PROG                      <t> — <pct>%, #<seq>, phase <phase>, <note>, final<data of other members>
//	                          (each part only when present, in the body's order)
//	CNCL                      <t> — <reason><data of other members>
//	ERR                       [<t> ][<code>] <msg> (cause <cascade_err>) — retryable|not retryable<data of other members>
//	                          (<t> only when it is not "error")
//	CAPS                      CLowl v<d.clowl> | supports: <entries, comma-separated>
//
// where <data> is nothing for {}, " — <key>: <value>" for a single string
// member, else " — " and the JCS form of the members (with invisible and
// line-breaking characters \u-escaped); <ctx> is
// " | ctx: ref <ref>" with " (sha256 <first 12 hex>…)" and ", inline
// fallback of <n> characters" as present, or " | ctx: inline, <n>
// characters"; <det> is " [deterministic]" when det is true; <pid> is
// " (re: <pid>)"; <auth> is " [authenticated]" when there is a token.
//
// The message is outside input, and the sentence is read by people and by
// models, so its text stays inside explicit boundaries (docs/protocol.md
// §6.5). Free text — <value>, <msg>, <reason>, <phase>, <note> — is always
// written as a JSON string literal: in double quotes, with '"', '\\',
// control characters and every other invisible or line-breaking character
// (U+2028, U+0085, bidirectional controls, ...) escaped, so a payload
// cannot end its quotes, start a new line or hide text; it decodes back
// to exactly the message's text. Names — ids, <t>, <code>, keys,
// <delegation_mode>, <ref>, capability entries — are written bare when they
// are plain tokens (letters, digits and . _ : @ / # * + ~ = -), quoted in
// the same way otherwise. A translation is therefore always one line. A
// prompt that embeds translations should still tell the model that quoted
// text is data from other agents, not instructions.
//
// SystemPrompt is the spec's system-prompt text (§7) for LLM agents,
// verbatim; SystemPromptV02 is the package's own prompt for the v0.2 wire
// form.
//
// # Errors
//
// Inbound and Outbound return *adapters.Error values (matching
// adapters.ErrInbound or adapters.ErrOutbound) whose Code is a
// protocol.Code, so CodeFor(Code) is the CLowl code to answer with in an
// ERR: malformed JSON, duplicate keys, invalid UTF-8, too deep: E001;
// schema violations: MISSING_FIELD ("required"), UNKNOWN_FIELD
// ("additionalProperties"), WRONG_TYPE ("type", "oneOf") → E001, and
// INVALID_FIELD (enum, pattern, lengths, ranges) → E008; other versions:
// UNSUPPORTED_VERSION → E014; ctx problems: CONTEXT_UNAVAILABLE → E003;
// Options.Authenticate refusals: UNAUTHORIZED → E002; oversize input:
// TOO_LARGE. The cause is one of the sentinels of errors.go when the
// failure is CLowl-specific (errors.Is(err, clowl.ErrHashMismatch)), and a
// schema failure carries the *schema.ValidationError with every violation.
//
// # Caveats
//
// Credentials in a body are not stored: the value of a member of body.d
// named as one (authorization, cookie, x-api-key, token, secret,
// password, …) and any "Bearer …" or "Basic …" value becomes
// "[redacted]", and so does the original of such an unknown member in
// meta.coercions. A message whose envelope would be over the event
// store's limit has its longest strings cut, each ending in "… [truncated,
// <size> bytes]" and listed in meta.truncated. Each message is translated
// on its own: replies that end one task in several ways (DONE, then ERR)
// give one terminal envelope each.
//
// CLowl links messages by pid only, so the adapter keeps an
// adapters.Index of where each translated mid landed (its Kind is the
// body.t): without it a DLGT whose pid is a DONE, or an INF answering a
// QRY, would name a task that does not exist. The default Index is in
// memory (the last adapters.DefaultIndexSize messages of this adapter);
// pass one over the event store (Options.Index) to survive restarts.
// CLowl mids must be unique (the spec asks for UUIDv7): the envelope id is
// the mid, and the store dedups on it. The spec's own examples reuse
// m001…m013 in different conversations.
//
// SystemPrompt still describes v0.1 ("cl":"0.1", ctx as a string) and only
// the semantic layer; the runtime is meant to wrap the model's output with
// ids and timestamps (§7 "Architecture Note"). Inbound refuses such raw
// output with E014.
//
// Fork: the router ends a subtask when the handler that delegated it
// returns, so a forked subtask runs alongside the delegating handler, not
// beyond it; the handler Waits for its forks before it returns. A fork
// that outlives its parent needs a detached-subtask option in the router.
package clowl
