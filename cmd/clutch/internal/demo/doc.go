// Package demo is the team `clutch serve --demo` runs: the quickstart's
// research flow (docs/protocol.md §10) with a lead that delegates, over and
// over, so that a newcomer opening the UI sees threads, task trees, tool
// calls, routing decisions, progress, chat and now and then a failure,
// live. Everything is local: fake tools, no network, no API keys.
//
// Each round is one run in one thread: the UI says what it wants in a
// chat.message, then sends a signed task.request (research.query.v1) for
// agent:lead; the lead delegates two research subtasks, which the router
// gives to agent:ken (fintech, a browser tool) and agent:research-2
// (health) by their tags; each researcher calls its tool, reports progress
// and returns a research.summary.v1; the lead merges them and answers in the
// thread. Every fourth round research-2's tool is down, so that subtask and
// the run fail (TOOL_UNAVAILABLE).
package demo
