// Package ui is Clutch's web UI: a Slack-like page that shows what a team of
// agents does as it happens, read through the gateway's HTTP API (package
// gateway, docs/protocol.md §9). Its assets are plain HTML, CSS and
// JavaScript embedded in the Go binary: building the module needs no Node
// step and the page loads nothing from elsewhere.
//
// # Basics
//
// Handler serves the page. Give it to the gateway, which serves it at its
// root next to its API:
//
//	gw, err := gateway.New(r, &gateway.Options{Auth: keys, UI: ui.Handler(nil)})
//
// or mount it yourself, with the gateway's API under "v1/" next to it:
//
//	mux.Handle("/v1/", gw)
//	mux.Handle("/", ui.Handler(nil))
//
// Handler answers "/" and "/index.html" with the page and "/ui/<file>" with
// its assets; anything else is 404. All URLs the page uses are relative to
// the page, so the pair can live under any prefix (http.StripPrefix).
//
// # What the page shows
//
//   - The home ("#/", where the page opens): the recent runs (GET
//     v1/runs), each named by its ask (the summary's title), with its
//     status in words and an icon (never colour alone), when it started,
//     how long it took, the agents involved and, for a failed run, what
//     failed; counts of running, waiting and failed runs, and filters on
//     them. System runs are not listed.
//   - A run's trace ("#/run/<id>"): its task tree (GET v1/runs/{id}/tree)
//     as rows with status, agent, duration and a waterfall bar; a failed
//     run's banner names the step that failed first, its agent, code and
//     message, once, and links to it; the selected task shows what it was
//     asked, its routing in words, its tool calls as cards (status,
//     duration, arguments, result or error; a tool call of an ended task
//     never shows as running), its questions, its result or error, its
//     ids behind copy buttons and its raw events behind a toggle, and
//     Cancel (running or waiting) or Retry (failed or timed out) buttons
//     (POST v1/tasks/{id}/cancel, /retry).
//   - A sidebar of channels (threads grouped by meta.ui_channel, newest
//     first, with their status) and of agents (online, tasks in flight,
//     success rate). Threads are listed a page at a time (GET v1/threads);
//     scrolling the list to its end, or its "older threads" button, reads
//     the page before (before=next_before), and a refresh of the newest
//     page keeps the older pages read.
//   - A thread reads as a conversation: its chat, one card per run (the
//     run's ask, its status in words, agents, task count and duration,
//     kept up to date, opening the run's trace), its questions and the
//     run's outcome; accepts, routing, progress, tool calls, subtasks and
//     retries are folded away until "Show every event" (kept in
//     localStorage), which shows the full log below.
//   - A message pane for one thread or one task: chat messages with author
//     and time; task requests and results as cards with their payload laid
//     out as a readable tree; progress inline; tool calls collapsible, with
//     their arguments and, once it arrives, their result; model calls
//     (x.clutch.model_call) in one line: model, provider, tokens in and out,
//     tool calls asked for, time; errors with their
//     code, retryability and retry plan; routing decisions with the selected
//     agent, the candidates with their scores, the rejected agents and the
//     reason.
//   - The attachments of any event. An artifact_ref attachment
//     ("artifact:sha256:<hex>") is a button that fetches GET
//     v1/artifacts/{ref} with the API key in the Authorization header,
//     makes the bytes a Blob of the artifact's media type and offers it
//     as a file through an object URL (revoked when the view changes); a
//     text or JSON artifact of up to 64 KiB is also shown inline, as text.
//     A failed fetch (a ref the store does not hold: 404) is shown next to
//     the button.
//   - Questions (docs/protocol.md §2.7). A task.question is a card with
//     the question, who may answer, its deadline and its details. While it
//     waits and the signed-in key may answer it (GET v1/questions says
//     may_answer), the card holds a form: a button per choice; approve,
//     reject (with a reason) or edit the proposed arguments (a JSON box
//     pre-filled from details.arguments) for an approval; a field per
//     property of a flat object schema; a JSON box for any other schema;
//     a text box otherwise. The answer is POSTed to
//     v1/questions/{id}/answer and the card shows it, and who gave it, once
//     the task.answer arrives; a refusal is shown in the card. A question
//     for someone else shows whom it waits for, without a form. The
//     sidebar's "Waiting for you" lists the questions the key may answer
//     (refreshed every 10 s and when a question or answer arrives), each a
//     link to its own view ("#/question/<id>"): the card and its form,
//     built from GET v1/questions, so a person may answer a question of a
//     task it may not read. A key that may not list threads (no scope)
//     still signs in, to answer what names it.
//   - A task-tree panel of the runs in the view; a task that waits for an
//     answer has the status "waiting".
//   - A compose box that posts a chat.message or a task.request (POST
//     v1/messages) into the thread.
//
// Deep links: "#/run/<id>", "#/thread/<id>", "#/task/<id>" and
// "#/question/<id>"; agents are named by their card's display name
// everywhere once GET v1/agents has been read. Dark and light themes follow
// prefers-color-scheme, with a toggle kept in localStorage.
//
// # Live updates
//
// Once signed in the page follows one stream of everything the key may
// read from the store's end (v1/stream?after=now, resumed after the last
// seq seen); each event refreshes the lists it changes — the sidebar's
// threads, the home, what waits for the key — so they follow the team
// without polling (a slow refresh remains as a safety net), and the focus
// stays on the control that had it. When that stream drops, a banner says
// the page is reconnecting (or offline) and Send is disabled until it is
// back; a key the server no longer accepts (a restart with a new key)
// signs the page out saying so.
//
// The page reads a view's history in pages (after=, limit=) and then follows
// v1/stream with fetch() so that it can send the API key in the Authorization
// header (the key never appears in a URL). When the stream drops it
// reconnects with backoff and resumes after the last seq it has shown, so no
// event is lost or shown twice. Only the newest events of a long thread are
// in the document; older ones are added as the reader scrolls up.
//
// # Security
//
// The reader signs in with an API key of the gateway's authenticator; the key
// is kept in sessionStorage, so it ends with the tab. Everything a message
// carries is put into the page as text (DOM textContent), never as markup, so
// a payload holding HTML or script is shown, not run. Responses carry a
// Content-Security-Policy that allows only the page's own scripts and styles
// and forbids framing.
package ui
