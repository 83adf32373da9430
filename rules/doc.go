// Package rules keeps a team's rules, workflows and context documents for
// agents, and records what agents do with them as evidence in the event
// log (docs/protocol.md §15.4–§15.11).
//
// # Basics
//
// A Library is one workspace's documents — rules, workflows, context, and
// the meta-prompt (META_PROMPT.md) — each with a stable id, a
// workspace-relative path, a name and group derived from the path, an
// optional description and a content hash "sha256:<hex>". Content lives in
// the store's artifact store; every change is an event of the library's
// own run, so Open rebuilds the library from any store, after a restart,
// or as of an earlier seq (Options.AsOf):
//
//	lib, err := rules.Open(ctx, st, &rules.Options{Workspace: "team", Schemas: schemas})
//	_, err = lib.Import(ctx, os.DirFS("team-rules"), nil) // rules kept in git
//	doc, err := lib.Publish(ctx, "agent:lead", rules.Publish{Path: "rules/REVIEW.md", Content: md})
//
// Agents work through a Session. An in-process agent gets one from its
// task (ForTask): its events go to the task's run, thread and task. An MCP
// host gets one bound to its session id (Session; the MCP tools of package
// github.com/clutchprotocol/clutch/rules/rulesmcp do this). The calls are
// those of the tools: Setup (memsetup), Discover (memdisc), Load (memload,
// with delta loading by hash), Refer (memref), Report (agentreport),
// Reject (agentrejected) and Artifact (artifact). Each records an
// attestation event (TypeSetup … TypeArtifact) from the agent.
//
// Constraints are what a reference names: ParseConstraints turns a rule or
// workflow into its H2 sections (id = the title) and their top-level list
// items (id = "Title/N"). Load appends a refer reminder (ReferReminder) to
// the content of rules and workflows, not of context.
//
// Drafts: Artifact stages an agent's proposed change (create, update,
// rename, delete) or discards it; a draft is its author's own — Load and
// Discover show it to its author only — until a reviewer approves it
// (Approve publishes it) or rejects it (RejectDraft); DraftContent gives
// a reviewer the document as it is and as the draft would make it. Package
// rules/rulesapi serves that review over HTTP (the gateway mounts it at
// /v1/rules), and the clutch command's "rules" subcommands drive it. Export
// writes the library back to a folder.
//
// Policy: Require returns router middleware that refuses a task's result
// with VALIDATION unless the agent referred to the rules a capability or
// workflow step requires.
//
// # Tenancy
//
// docs/protocol.md §6.7. The library's run, thread and task
// ("run:rules:<workspace>", …) and the runs of unbound sessions
// ("run:rules:<digest>") are reserved (protocol.Reserved): no outside
// caller writes there through a surface (auth.CheckWrite refuses them as
// not found); the library writes them itself, as the agent it acts for.
// A session is the agent's own: Library.Session binds a host session id to
// a task only when the agent requested or took part in it; any other id,
// another agent's task included, is a session of the agent's own run, so
// its events never go into another caller's run and the answer tells
// nothing about other callers' tasks; drafts
// carry their author, and the surfaces show a caller only its own drafts
// unless it holds auth.ScopeReadAll.
//
// # Errors
//
// The sentinels of errors.go, matched with errors.Is, each with a
// protocol.Code. Their messages carry the phrases of docs/protocol.md
// §15.10 ("invalid params", "Unknown rule id", "unsafe path", "file not
// found in cache", "artifact already has an incompatible local change",
// "draft already exists"). A refused reference is a *ReferError with the
// retryable code and action an agent acts on.
//
// # Caveats
//
// Several Library values (in several processes over a shared store) may
// serve one workspace: each change and each session call first applies
// the library events others appended (Sync does it on demand, before
// Documents, Document or Drafts). Checks and appends are not one
// transaction across writers, so two writers racing on one document can
// both succeed; the log keeps both events and every reader applies them in
// the same order. Document content is limited to MaxDocumentSize. Drafts
// are per author; reviewers see them all (Drafts).
package rules
