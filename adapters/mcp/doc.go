// Package mcp connects Clutch to the Model Context Protocol in both
// directions, on the official SDK github.com/modelcontextprotocol/go-sdk
// (v1.8.0, which speaks MCP 2026-07-28 and falls back to 2025-11-25 for
// older servers):
//
//   - [Client]: agents call tools of many MCP servers, each call recorded
//     as tool.call / tool.result / tool.error events of the calling task
//     (docs/protocol.md §2.3, §6, §7; docs/protocol.md §13.3: the multi-server client tool).
//   - [Server]: an MCP host (an IDE assistant, another agent runtime)
//     joins the team through tools over stdio or Streamable HTTP (docs/protocol.md
//     §15: an agent-facing tool surface with a uniform result envelope).
//
// This package is a bridge, not a translator (see package adapters): it
// runs live MCP sessions with outside servers and hosts, so it has no
// adapters.Adapter; its [Client] and [Server] are what a host wires to
// the router.
//
// # Basics
//
// Configure servers by name — stdio (Command, Args, Env, Dir), Streamable
// HTTP (URL, Headers) or any go-sdk transport — and call tools from a
// router handler through its task:
//
//	c, _ := mcp.NewClient([]mcp.ServerConfig{
//		{Name: "everything", Command: "node", Args: []string{"dist/index.js", "stdio"}},
//		{Name: "search", URL: "https://search.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer …"}},
//	}, nil)
//	defer c.Close()
//	r.Register(ctx, card, func(ctx context.Context, t *router.Task) (*router.Result, error) {
//		res, err := c.Call(ctx, t, "everything", "echo", map[string]any{"message": "hi"}, nil)
//		...
//	})
//
// A server is addressed as "mcp:<name>", the id AgentCards (capability
// tools and servers) and tool allowlists use. Connections are made on the
// first call, dropped when they break, and made again on the next call: a
// stdio server that crashed is restarted as a fresh process. After failed
// connection attempts calls fail fast (TOOL_UNAVAILABLE with retryAfter)
// for a backoff that doubles from 100 ms up to ClientOptions.MaxBackoff.
// Each line a stdio server writes to stderr goes to the client's slog
// logger (attributes mcp_server, stderr). Close ends every session and
// every server process (stdin closed, then SIGTERM, then SIGKILL to the
// process group) and waits for them.
//
// Tool lists are cached per server, dropped on notifications/tools/
// list_changed (ClientOptions.OnToolsChanged is told) and on reconnection,
// and reloaded on demand (Refresh). [Client.LLMTools] names every tool
// "mcp_<server>_<tool>" (docs/protocol.md §13.3.3), matching ^[A-Za-z0-9_-]{1,64}$:
// server names may not contain '_', so two servers never produce the same
// name; [Client.Resolve] maps a name back. A [Toolbox] is the view of one
// task: only the servers its policy allows, calls by LLM name.
//
// # Egress
//
// Every connection to a Streamable HTTP server is dialled through
// ClientOptions.Egress (package egress, docs/protocol.md §6): the address
// the server's name resolves to is checked at every dial and redirect, so
// neither a URL nor a DNS answer can point the client at loopback, a
// private network or a cloud metadata address unless an IP or CIDR rule
// allows it; proxies are off. The default policy (nil) allows public
// addresses only: a server on 127.0.0.1 needs
// egress.New(&egress.Options{Allow: []string{"127.0.0.1"}}).
//
// Each call to an HTTP server is also held, before any I/O, to the
// security.network of the calling agent's card (docs/protocol.md §6.4):
// none — or no level at all — refuses it; egress-restricted needs the
// server's URL host to be allowed by name (or an IP literal allowed by
// address); open leaves it to the policy. A connection is shared by the
// agents that call the server, which is why the card is checked on every
// call and not only when dialling.
//
// stdio servers are processes, not connections: the policy does not see
// what they connect to, and a card of level none may use them. Confine
// them with the operating system (containers, network namespaces). The
// same holds for ServerConfig.Transport.
//
// # Mapping: MCP → events
//
// [Client.Call] does, in order:
//
//	policy (no I/O)    request security.policy.tool_allowlist (when set) and the
//	                   agent card's tools/servers must include "mcp:<server>",
//	                   else tool.error POLICY_DENIED; for an HTTP server also
//	                   the card's security.network (see Egress below)
//	tool.call          {call_id, tool: "mcp:<server>", name, args}  (CallPayload)
//	tools/call         with a deadline and _meta.progressToken (the tool.call id)
//	progress           notifications/progress → task.progress of the task
//	                   {tool, name, call_id, progress, total, message} while the
//	                   call is pending; later ones are dropped
//	tool.result        {tool, name, call_id, content, structuredContent}
//	                   (ResultPayload); over InlineResultBytes (256 KiB) the
//	                   content goes to the artifact store and the payload
//	                   holds {artifact, bytes}
//	tool.error         protocol.ErrorPayload {code, message, retryable,
//	                   details{tool, name, server, call_id, ...}}
//
// tool.* events have no recipient agent ("to": []); the server is named in
// the payload (docs/protocol.md §10 step 5). They carry no payload_type.
// The call id (call_id; details.call_id in a tool.error, docs/protocol.md
// §2.3.1) is the tool.call event's own id on all of a call's events, its
// progress too; a call refused before its tool.call (policy, an unknown
// server, a closed client, arguments that are not an object) gets a new
// "call_" id on its tool.error, which names no call.
//
// # Trace context
//
// A call carries the trace of its tool.call event — the execute_tool span
// when package telemetry observes the router, else the task's — as a W3C
// traceparent in the tools/call's _meta and, over Streamable HTTP, as a
// header. submit_task of the Server surface reads the caller's traceparent
// from _meta, else from the HTTP request, into the task.request it
// submits, which then continues the caller's trace. A malformed value is
// ignored.
//
// # Errors
//
// A failed call returns a [*ToolError] (errors.Is matches its
// protocol.Code) and records the same error as the tool.error payload:
//
//	TOOL_UNAVAILABLE  cannot connect, connection lost, server crashed mid-call;
//	                  retryable; details.stderr_tail for stdio servers,
//	                  details.retryAfter while backing off
//	TOOL_NOT_FOUND    the server said so — JSON-RPC error (go-sdk, TS SDK v2) or an
//	                  isError result "Tool x not found" (TS SDK v1) — or the server
//	                  is not configured; details.available_tools (docs/protocol.md §13.3.5)
//	TOOL_FAILED       an isError result; details.content (and structuredContent)
//	                  kept; a docs/protocol.md §15 envelope {error, code, retryable,
//	                  retryAction} keeps its retryability, details.retryAction
//	                  and details.server_code
//	RATE_LIMITED      HTTP 429 (details.retryAfter from Retry-After), or an error
//	                  naming a rate limit or carrying retryAfter; retryable
//	TIMEOUT           the call's deadline (CallOptions.Timeout, ServerConfig.Timeout,
//	                  ClientOptions.Timeout; 30 s) or the caller's; retryable;
//	                  the server gets notifications/cancelled
//	CANCELLED         ctx was cancelled; the server gets notifications/cancelled
//	POLICY_DENIED     refused before any I/O (allowlists, the card's network
//	                  level), or a dial or redirect the egress policy refused;
//	                  details.host, details.rule (and details.address)
//	TOO_LARGE         a result over MaxResultBytes (4 MiB); the connection stays up
//	VALIDATION        structuredContent missing or not matching the outputSchema
//	INVALID_FIELD     arguments that are not a JSON object
//
// Results the tool flagged isError are returned too, next to the error.
// Configuration errors match [ErrInvalidConfig]; [ErrUnknownServer],
// [ErrNoTask] and [ErrClosed] complete the sentinels.
//
// # Server surface
//
// [NewServer] puts an MCP server in front of a router and its store. Tools:
// list_agents, list_payload_types, submit_task (submits as the host and
// waits up to wait_sec, sending a progress notification for each event of
// the run), wait_task, cancel_task (tasks submitted through this server),
// get_run_events (paged by seq), get_task_tree, answer_question (below). Every result is docs/protocol.md §15's
// envelope: content holds the JSON text of structuredContent, isError
// marks errors, and an error's structuredContent is
// {error, code, retryable, retryAction, details} with a code of the
// protocol table and a retryAction such as fix_arguments,
// call_list_agents_and_fix_requires, call_wait_task or
// submit_a_new_task; its error says what is wrong in words, without Go
// package prefixes, and a payload's schema violations are in details as
// {"violations": [{"path", "keyword", "message"}]}. Arguments are
// validated against the tool's input schema first. The input schemas give
// every member one "type" (an optional member is one left out of
// "required", never a ["null", T] union, which hosts that map tool
// schemas onto a single-type dialect refuse, and the MCP Inspector's
// --strict flags), every array its items, and a member of any JSON value
// an anyOf of single-typed branches; a member sent as null counts as not
// given. ServerOptions.ExtraTools' schemas are served as given: write
// them the same way. Each call is recorded in the store as an event of type
// x.clutch.mcp.call ([TypeHostCall], payload [HostCallPayload]) from the
// caller's agent id, in a run of its own ([Server.HostRun]), so the audit
// trail shows what the host did without entering the runs it reads.
// list_payload_types lists the schema registry behind the router's
// validator (schema.RegistryOf(r.Validator())): none when the router has no
// *schema.Registry or *schema.Binder validator.
// [Server.Handler] serves Streamable HTTP (stateless, so both protocol eras
// work); [Server.Run] serves one session on a transport such as
// &sdk.StdioTransport{}.
//
// A task that asks (router.Task.Ask, docs/protocol.md §2.7) while
// submit_task, wait_task or answer_question waits on it is put to the
// host's person when the host declared elicitation, the caller may answer
// and the question fits a form (choices, free text, an approval — approve
// or reject with a reason —, or a schema of top-level fields): the tool
// result carries input requests (multi round-trip requests), the client
// calls the tool again with the person's responses and the request state
// "clutch-task:<task_id>", and each accepted response is the caller's
// answer; the task runs on in that call. A client of an older revision
// (2025-11-25: the TypeScript SDK v1) gets an elicitation/create request
// for each question instead, within the call, which the server can send
// over stdio and over a stateful Handler (ServerOptions.HTTP with
// Stateless false) but not over the default stateless one: there such a
// host answers with answer_question. Otherwise, or when the person
// declines, the result is the task with status "question", the question,
// and next "call_answer_question": answer_question {question_id, value}
// answers as the caller (a value that does not fit is fix_arguments) and
// waits for what follows. cancel_task ends a waiting task.
//
// ServerOptions.ExtraTools adds tools of other packages ([ServerTool]) with
// the same caller, argument validation, envelope and recording; a
// [ServerToolError] adds members of its own to the error's
// structuredContent. Package github.com/clutchprotocol/clutch/rules/rulesmcp
// serves the rules tools of docs/protocol.md §15.4 this way.
//
// # Server identity, tenancy and limits
//
// There is no anonymous default: NewServer needs ServerOptions.Caller,
// ServerOptions.Auth or both, and ServerOptions.Expose.
//
//   - Over stdio (Run) the owner of the process is the caller:
//     ServerOptions.Caller (an agent id and scopes, package auth). Run
//     refuses to start without it.
//   - Over Streamable HTTP (Handler) each request is authenticated by
//     ServerOptions.Auth (API keys, bearer tokens through a verifier hook,
//     TLS client certificates; see package auth) and limited by
//     ServerOptions.Limits (a token bucket per caller: 429 with
//     Retry-After; a bound on requests in flight: 503 with Retry-After).
//     A request without accepted credentials gets 401 and never reaches a
//     tool; without Auth, Handler answers 401 to everything.
//   - Sessions served by the go-sdk server of [Server.MCPServer] over other
//     transports have no caller: every tool answers UNAUTHORIZED.
//
// The caller's agent id is the from of what submit_task submits. A caller
// waits for, cancels and reads the events and tree of its own tasks and
// runs only (another's answer NOT_FOUND) unless it holds
// auth.ScopeReadAll; the host-call run holds every caller's calls, lives
// under reserved ids ("run_clutch_mcp_…", protocol.Reserved) and is read by
// auth.ScopeAdmin only (docs/protocol.md §6.7). submit_task takes auth.ScopeSubmit and list_agents
// auth.ScopeAgents (else POLICY_DENIED). list_agents lists only the
// exposed agents, and submit_task routes among them only: its "to" must
// name exposed agents (else NOT_FOUND), and without "to" the request is
// addressed to all of them, so requires never reaches another agent.
//
// submit_task's idempotency_key is scoped to the caller: the task.request
// carries it and a run_id derived from the caller and the key
// (auth.Deriver.RunID, keyed with the store's secret), so the same key again answers the task the first
// started without running it twice, and another caller's same key is its
// own task. At most ServerOptions.MaxTracked tasks submitted here are
// followed for cancel_task; past it submit_task answers CAPACITY. A host
// that goes away from submit_task detaches: the task goes on (wait_task
// finds it).
//
// # Caveats
//
//   - The size cap is exact on stdio and HTTP (the frame is measured before
//     it is decoded, and replaced by an error for the same request); on other
//     transports the decoded result is measured.
//   - structuredContent is validated with github.com/google/jsonschema-go
//     (draft 2020-12 and draft-07, the dialects MCP uses; already a
//     dependency of the SDK). The project's schema package uses gojsonschema,
//     which has no 2020-12. An outputSchema that cannot be compiled (e.g. a
//     remote $ref) is logged and not checked.
//   - Over HTTP the SDK may deliver the last progress notification after the
//     result; it is then dropped, never stored after tool.result.
//   - A call cancelled because its task was cancelled cannot record its
//     tool.error: the task has ended (task.cancel says why).
//   - A call whose connection was already closing is sent once more over a
//     fresh connection (it never reached the server); no other call is
//     retried behind the caller's back.
//   - stdio servers get a minimal environment unless InheritEnv is set.
//   - cancel_task only cancels tasks submitted through the same Server.
//   - The Server writes each progress notification before the result, but
//     a TypeScript SDK v1 client drops notifications that reach it in the
//     same read as the response: a host on it sees no progress for a task
//     that ends within milliseconds.
package mcp
