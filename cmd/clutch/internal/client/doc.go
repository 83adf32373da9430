// Package client is the small client of the gateway's /v1 API that the
// clutch CLI uses with --url: list runs, threads and agents, page a run's,
// thread's or task's events, read a task tree, and follow the live stream
// (Server-Sent Events) with resume, and review a rules library (the
// /v1/rules surface of package rules/rulesapi). It also acts: get one
// event by id or seq, submit a task request or a chat message, follow a
// task until it ends or asks (Wait), cancel and retry a task, and answer
// a question. It speaks the API the
// gateway package documents; every request carries the API key as a
// bearer token.
//
// # Errors
//
// A non-2xx answer becomes an [*Error] carrying the HTTP status and the
// protocol code, message and retryability of the gateway's error body, so
// protocol.CodeOf and errors.Is(err, protocol.CodeX) work on it. Transport
// failures are returned as they are.
package client
