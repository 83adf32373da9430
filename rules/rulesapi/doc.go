// Package rulesapi is the HTTP surface of a rules library (package
// github.com/clutchprotocol/clutch/rules): what a reviewer, the clutch CLI
// or a UI needs to read a team's rules, workflows and context documents and
// to review the drafts agents propose (docs/protocol.md §15.9) — approve
// one, which publishes it as a new version, or reject it with a reason.
//
// # Basics
//
// New returns an http.Handler over a library. It does not authenticate: it
// reads the caller from the request's context (auth.FromContext), so mount
// it behind package auth — the gateway does, at /v1/rules, with its
// Options.Rules:
//
//	lib, _ := rules.Open(ctx, st, &rules.Options{Workspace: "team"})
//	h, _ := rulesapi.New(lib, nil)
//	gw, _ := gateway.New(r, &gateway.Options{Auth: keys, Rules: h})
//
// A request without a caller in its context is answered 401.
//
// # Endpoints
//
// Paths are relative to where the handler is mounted (/v1/rules behind the
// gateway). All JSON is UTF-8.
//
//	GET  /documents[?text=true]   DocumentList: the published documents, sorted by path;
//	                              with text=true each with its text and constraints
//	GET  /documents/{id}          DocumentView with text and constraints
//	GET  /drafts                  DraftList: the open drafts with base_text and text
//	POST /drafts/approve          Review {"author","id"}            → 200 Approved
//	POST /drafts/reject           Review {"author","id","reason"}   → 204
//	POST /import                  Import {"files":{path: text},"prune"} → 200 Imported
//
// A draft is named by its author and id (a document id, or the tmp- id of a
// create), as Library.Approve and Library.RejectDraft take them. Its
// base_text is the document as it is now and text what approving it would
// publish, so a client can show the change as a diff; conflict says that
// approving it would fail (409 CONFLICT): the document changed since the
// draft was made, or the path is taken. Approving a delete answers the
// removed document with "removed": true. The reviewer — the sender of the
// published, removed or draft_rejected event — is the caller. Import takes a
// folder as a map of slash-separated paths to contents (with
// rules.ManifestName when the folder has one) and imports it as
// Library.Import does, as the caller; behind the gateway the body is bounded
// by its MaxBodyBytes. There is no export endpoint: GET
// /documents?text=true has everything a client needs to write a folder.
//
// # Scopes
//
// Reading documents needs auth.ScopeSubmit or auth.ScopeReadAll. The drafts
// list holds everybody's drafts for a caller with read:all, and only its own
// for any other. Approving, rejecting and importing need auth.ScopeAdmin;
// without it the answer is 403.
//
// # Tenancy
//
// docs/protocol.md §6.7: the handler writes only through the library
// (approve, reject, import, as the caller, with auth.ScopeAdmin), never
// an event of a caller's choosing, so the library's reserved run
// "run:rules:<workspace>" takes no outside writes; a caller without
// auth.ScopeReadAll sees only its own drafts.
//
// # Errors
//
// Every error answer has the gateway's error body
//
//	{"error":{"code":"CONFLICT","message":"...","retryable":false}}
//
// with the HTTP status of its protocol code (auth.Status): 400 for a
// malformed body or query, 401, 403, 404 for an unknown endpoint, document
// or draft, 409 for a conflicting approval, 500 INTERNAL for anything
// unexpected — logged to Options.Logger, never described to the client.
// Bodies are decoded strictly (DecodeReview, DecodeImport): unknown
// members, duplicate members and invalid UTF-8 are refused.
//
// # Dependencies
//
// github.com/go-json-experiment/json, the module's strict JSON decoder, for
// the request bodies; testing/fstest's MapFS (a plain in-memory fs.FS of the
// standard library) holds an imported folder.
package rulesapi
