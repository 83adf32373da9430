// Package protocol is the Clutch envelope: the one message format every
// agent, store, router and adapter of the module speaks (Clutch Protocol v0,
// "clutch/0.1", docs/protocol.md).
//
// # Basics
//
// A [Message] is the envelope of docs/protocol.md §1.1: ids (id, thread_id,
// run_id, task_id, parent_task_id), sender and recipients, a [Type] (the 19
// of §2 or an x.<vendor>.<name> extension), the structured contract (domain,
// payload_type, schema_ref) and a payload kept as raw JSON. An [AgentCard]
// advertises an agent and its [Capability] list (§1.4, §1.5). A task that
// asks a person carries a [Question] in its task.question and gets an
// [Answer] in a task.answer (§2.7); [Question.Validate], [Question.MayAnswer]
// and [Question.CheckValue] are the checks of both. A tool.call and its
// tool.result or tool.error carry one call id (§2.3.1): [ToolCallID] reads
// it, old events included, and [CheckToolCallID] holds a new event to the
// rule.
//
// Build messages with [NewMessage] or an [IDs] source, set a typed payload
// with [Message.SetPayload], and read one back with [DecodePayload]:
//
//	m := protocol.NewMessage(protocol.TypeTaskRequest, "agent:ui")
//	m.PayloadType = "research.query.v1"
//	_ = m.SetPayload(Query{Text: "Nordic payments"})
//	raw, err := protocol.Encode(m)  // validates, encodes once, remembers
//	...
//	in, err := protocol.Decode(raw) // strict; keeps raw as in.Raw()
//	q, err := protocol.DecodePayload[Query](in)
//
// # Ids
//
// Ids are prefixed ULIDs (msg_, run_, task_, thr_). Ids from one [IDs]
// source are unique across goroutines and strictly increasing, so they sort
// by creation time; the random part of each id is not guessable from the
// ids before it. Tests get the same ids and timestamps on every run from
// [NewIDs] with a fixed Clock and a seeded Entropy reader.
//
// # Encoding once
//
// A message is encoded once. [Decode] keeps a copy of the bytes it was given
// and [Encode] of a decoded message returns those bytes unchanged; Encode of
// a Go-built message validates it, encodes it and remembers the bytes. The
// store, adapters and signatures all see the same bytes, and a signed
// message is never re-encoded. After changing a field on purpose, call
// [Message.Reset] so the next Encode encodes the new fields.
//
// # Strict decoding
//
// Decode accepts one JSON object of at most 1 MiB (see [Decoder] for other
// limits) and refuses, each with its own [Code]: invalid JSON, invalid UTF-8
// or a lone surrogate, a duplicate key at any depth, a field of the wrong
// JSON type, a missing required field, an unknown type, a version other than
// clutch/0.1, input that is too large or nested too deeply.
//
// Unknown fields, the one rule: a top-level member that docs/protocol.md
// §1.2 does not define is kept verbatim in [Message.Extensions] (so a
// foreign field survives a round trip and is covered by a signature); an
// undefined member inside the protocol's own objects (from, to[], trace,
// security, auth, policy, attachments[]) is an UNKNOWN_FIELD error, because
// a typo there ("tool_allow_list") must not silently switch a policy off.
//
// Decode checks structure; [Message.Validate] checks meaning (agent id
// prefixes, attempt ≥ 1, RFC 3339 ts, id lengths, payload_type and
// schema_ref forms, requires/prefers forms). Meta numbers decode as
// json.Number, so no digit is lost. [DecodePayload] and [DecodeAgentCard]
// are as strict about duplicate keys, invalid UTF-8 and unknown members.
//
// # Signing
//
// [Sign] and [Verify] implement docs/protocol.md §6 "ed25519 signatures"
// with one rule: Ed25519 over the RFC 8785 (JCS) canonical bytes of the
// envelope with only security.auth.sig removed; scheme "ed25519"; sig in
// base64url without padding. Verify works on the bytes as received: one
// strict pass refuses duplicate keys, invalid UTF-8 and anything else that
// is not strict JSON while it builds the canonical bytes, then the key id
// is resolved through a [KeyResolver]. [Canonical] exposes the
// canonicalisation. testdata/signed holds signed messages, their canonical
// signing input and the test key, for implementations in other languages.
//
// An AgentCard lists the agent's public keys in security.keys ([CardKey]);
// which kid may speak for which agent, rotation and the policy of what must
// be signed belong to the registry (package registry, docs/protocol.md §6.1).
//
// # Errors
//
// Every error of this package is an [*Error] carrying a stable [Code], the
// JSON pointer of the field and the byte offset. The codes form one table
// ([Codes]), each with a default retryability and a summary; a Code is
// itself an error, so errors.Is(err, protocol.CodeDuplicateKey) matches
// through any wrapping, and [CodeOf] reads the code of any error of the
// module. [ErrorPayload] is the wire form {code, message, retryable,
// details} of §5.4. The CLowl code (E001–E016) and HTTP status of each
// code in docs/protocol.md §5.4 belong to the packages that speak those
// protocols (package clowl of the adapters, the module's HTTP surfaces):
// this package links no HTTP or CLowl code.
//
// # Caveats
//
// JCS treats numbers as IEEE-754 doubles: integers beyond ±2^53 in a signed
// message lose precision in the signing input, so send such values as
// strings; a number beyond the range of a double cannot be canonicalised
// and is refused (INVALID_JSON).
package protocol
