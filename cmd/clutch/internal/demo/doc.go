// Package demo is the team `clutch serve --demo` runs: research rounds at
// a pace a person can follow in the web UI — a lead that delegates, a
// parallel fan-out, tool calls with progress, a retry, failures and
// questions for the requester — over and over. Everything is local: fake
// tools, no network, no API keys.
//
// # Basics
//
// New makes a Team with a fresh Ed25519 key for each of its agents and
// for the UI. Give the registry its public keys (Team.Keys, for
// registry.Options.Keys) and the router its private keys (Team.Signers,
// for router.Options.Signers); Register registers the agents; Round plays
// one round, Run plays round after round with a pause between them.
//
// The agents, each with a display name, a description, capability tags
// and tools on its card:
//
//	agent:lead  Mira (lead)  skill:plan, skill:write  splits, delegates, writes the brief
//	agent:ken   Ken          skill:research  tool mcp:browser      web, fintech, markets
//	agent:ines  Ines         skill:research  tool mcp:papers       papers, health, regulation
//	agent:dara  Dara         skill:research  tool mcp:market-data  data, volumes, prices
//
// # A round
//
// Each round is one run in one thread. The UI (agent:ui) says what it
// wants in a chat.message and sends a signed task.request
// (research.query.v1, whose query titles the run) for the lead, admitted
// as a gateway would. The lead reports its plan (task.progress), then
// delegates two or three research subtasks at once — each routed by its
// preferred tag — and waits for all of them, reporting each one's end.
// A researcher records a tool.call, a task.progress per result page read
// (with the call's call_id) and the tool.result, then summarises. The
// lead writes the brief (research.summary.v1) and answers in the thread.
// Every step takes demo time on a timer tied to the task's context: a
// task takes 1 to 4 s, a round 5 to 10 s (Options.TimeScale scales it).
//
// In every round one researcher's tool fails once with a retryable error
// (RATE_LIMITED, TOOL_UNAVAILABLE, TIMEOUT) and the router's retry, the
// task's attempt 2, succeeds. The rounds, i modulo 6:
//
//	0  Nordic payments: who leads real-time rails?          Ken, Dara; completes
//	1  Telehealth in rural clinics: is it sticking?         asks which region first (choices)
//	2  Open banking in the EU: what changes with PSD3?      Ines's index is offline (TOOL_UNAVAILABLE):
//	                                                        the brief goes without it, with a caveat
//	3  Wearables for remote patient monitoring: who pays?   asks approval of a paid query first;
//	                                                        rejected, the brief goes without it
//	4  Stablecoins for B2B cross-border payments: ready yet? Dara has no licence (TOOL_FAILED): the
//	                                                        brief needs the figures, the run fails
//	5  Battery storage: which grid markets pay best?        Ken, Ines, Dara; completes
//
// A question (Task.Ask, before the lead does anything, since the handler
// runs again from the start once answered) may be answered by the
// requester or any caller with the admin scope (Answerers): the UI's key.
// Round returns as soon as the lead waits, so later rounds go on; a
// question nobody answers within QuestionDeadline (2 minutes) ends its
// run with TIMEOUT.
//
// # Signatures
//
// Every event the team's agents send is signed as the router stores it
// (router.Options.Signers), the UI's request and chat messages by Round.
// Each key has a kid of its own, made from the public key, since every
// process makes new keys and a kid names one key forever; Keys is also
// the key file of `clutch verify`. The router's own events (routing
// decisions, timeouts) and the registry's are not signed.
package demo
