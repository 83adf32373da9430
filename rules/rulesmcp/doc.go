// Package rulesmcp serves a rules.Library to MCP hosts: the seven tools of
// docs/protocol.md §15.4 — memsetup, memdisc, memload, memref,
// agentreport, agentrejected and artifact — as tools of the Clutch MCP
// server (github.com/clutchprotocol/clutch/adapters/mcp), next to its task
// tools, over stdio and Streamable HTTP:
//
//	lib, _ := rules.Open(ctx, st, &rules.Options{Workspace: "team", Schemas: schemas})
//	tools, _ := rulesmcp.Tools(lib, nil)
//	srv, _ := mcp.NewServer(r, &mcp.ServerOptions{Caller: host, Expose: agents,
//		ExtraTools: tools})
//	err := srv.Run(ctx, &sdk.StdioTransport{})
//
// # Basics
//
// Every result uses the envelope of docs/protocol.md §15.3: content holds
// one text block with the JSON of structuredContent, and isError marks an
// error, whose structuredContent is {error, code, retryable, retryAction}
// (plus validConstraints for memref's unknown_constraint). Arguments are
// checked against each tool's input schema before the tool runs.
//
// The caller of each call is the server's (the configured caller over
// stdio, the authenticated caller of each HTTP request): attestation
// events are sent from its agent id, and drafts are its own. memsetup binds
// the caller's session — per caller and MCP session id, "" for stdio and
// stateless HTTP — to the host session id it passes; the calls that follow
// record their events in that session's run (the run of the task the id
// names, when it names one the caller submitted or ran). Calls before any
// memsetup use a session of the caller with an empty id.
//
// # Tenancy
//
// docs/protocol.md §6.7: every tool acts for the call's caller through the
// library (attestations and drafts are the caller's, sent from its agent
// id); a session id names a task's run only when the caller requested or
// ran that task (rules.Library.Session), else the caller's own reserved
// session run, so no call writes into another caller's run or into the
// library's reserved run "run:rules:<workspace>" directly.
//
// # Errors
//
// The rows of docs/protocol.md §15.10: invalid arguments give an error
// result whose message starts "invalid params"; an unknown tool is the MCP
// protocol error of the SDK ("unknown tool"); the library's errors keep
// their messages ("Unknown rule id", "unsafe path", "file not found in
// cache", …) with the code protocol.CodeOf gives them; memref's refusals
// carry the retryable codes unknown_rule_or_workflow and unknown_constraint.
//
// # Caveats
//
// Session bindings live in memory: after a restart a host calls memsetup
// again (as it does at the start of every session). At most
// Options.MaxSessions bindings are kept.
package rulesmcp
