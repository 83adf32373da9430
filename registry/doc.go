// Package registry keeps the AgentCards of a Clutch deployment (docs/protocol.md
// §1.4): who is registered, with which capabilities, whether they are
// online, how loaded they are and how often their tasks succeed. It is
// event-sourced: every change is an event in a [store.Store], and the
// registry is rebuilt from those events when it is opened.
//
// # Basics
//
// Open a registry over a store; nil options take the defaults:
//
//	reg, err := registry.Open(ctx, st, nil)
//
// Register an agent with its card. An agent whose handler runs in this
// process is registered Local: it is online for as long as it stays
// registered and needs no heartbeats.
//
//	err = reg.Register(ctx, card, &registry.RegisterOptions{Local: true})
//
// A card whose v is empty is registered as [protocol.Version] (a wrong v
// is refused). Registering what the registry already holds, the same card
// (equal canonical JSON) with the same Local, stores no second
// agent.register: a process may register its agents at every start
// without growing the log.
//
// An agent in another process (reached over A2A, MCP, HTTP) is registered
// without Local and must send heartbeats: it is online while its last
// register, update or heartbeat is no older than Options.HeartbeatTTL
// (30 s by default). Call [Registry.Heartbeat] every TTL/3 or so; an agent
// that stops goes offline without any further call. [Registry.Update]
// replaces a card (docs/protocol.md §2.4 "capability change") and
// [Registry.Remove] forgets an agent.
//
// [Registry.Candidates] answers step 2 of the matching algorithm (docs/protocol.md
// §4.2): the agents that have every capability id of requires (AND
// semantics), sorted by id, online or not; the router applies [Registry.Online], the hard
// filters and the preference scoring.
//
//	for _, a := range reg.Candidates([]string{"skill:research"}) {
//		if reg.Online(a) && reg.TryAcquire(a) {
//			// run the task, then
//			reg.Release(a, err == nil)
//		}
//	}
//
// [Registry.TryAcquire] takes a slot unless the card's
// limits.max_concurrency is reached (0 or no limits: unlimited), atomically;
// [Registry.Release] frees it and records the
// outcome. [Agent.InFlight] is the load and [Agent.SuccessRate] the share
// of the last Options.SuccessWindow (default 32, at most 64) outcomes that
// succeeded: the "least loaded" and "recent success rate" tie-breakers of
// §4.2. Both counters belong to the agent id, not to its card: they carry
// over updates and re-registrations.
//
// A Registry is safe for concurrent use; reads never wait for a write's
// store append. [Registry.AppendCandidates] appends to a caller's slice,
// for a router that routes task after task.
//
// # Keys and signatures
//
// The registry is also the key registry of docs/protocol.md §6.1. An
// agent's public Ed25519 keys are those of its card (security.keys) and
// those Options.Keys configures for it. [Registry.Keys] resolves the
// agent's current kids for messages arriving now; [Registry.AllKeys] also
// resolves kids an update or a removal retired, for messages read back
// from the store. Kids belong to their agent: a kid of agent B does not
// resolve for agent A. A card that binds a kid the agent has or had to a
// different key is refused (ErrInvalidCard): a kid names one key forever,
// so the log stays verifiable across rotations.
//
// [Registry.Verify] applies Options.Signatures (DefaultSignaturePolicy
// when nil: agent.register, agent.update, task.cancel, requests carrying a
// policy and every message of a keyed agent must be signed) to a message
// that entered from outside. [Registry.Admit] takes agent.register,
// agent.update and agent.heartbeat messages from outside: it verifies them
// under the writers' lock, checks the card as Register and Update do, and
// stores the message as it arrived. Register, Update, Heartbeat and Remove
// called in Go are the host's own acts and are not checked.
//
//	reg, _ := registry.Open(ctx, st, &registry.Options{
//		Keys: map[string][]protocol.CardKey{"agent:ui": {protocol.NewCardKey("key_ui_01", pub)}},
//	})
//	err := reg.Admit(ctx, decodedRegistration) // ErrSignature unless signed by a key of its sender
//
// # Events
//
// Each write is one event, appended to the store before the registry
// changes, with from.agent_id the agent's id, run_id Options.RunID
// ([DefaultRunID], "run_registry", by default), thread_id "thr_registry",
// task_id "task_registry", an empty to, and id and ts from Options.IDs:
//
//	call        type                    payload
//	Register    agent.register          the card; meta {"clutch_local": true} when Local
//	            (nothing)               the same card and Local again, Local
//	            as Heartbeat            the same card and Local again, not Local
//	Update      agent.update            the new card
//	Heartbeat   agent.heartbeat         {"status": "ok"} (see "Liveness as state" below)
//	Remove      x.clutch.agent.remove   {"agent_id": "<id>"}
//
// # Liveness as state
//
// Over a store with [store.Presence] (every in-tree store) a heartbeat is
// current state, not history (docs/protocol.md §2.4): Heartbeat, and
// Register, Update and Admit of a heartbeat, record a beat of the key
// "<RunID>/<agent id>" whose data is the registry clock's time, replacing
// the agent's last beat; the log grows only with changes:
//
//	change                              events, in one append
//	first beat, or a beat after a lapse x.clutch.agent.offline of the lapse (if any), then
//	                                    agent.heartbeat, idempotency key "clutch.online/<id>/<last>"
//	a lapse noticed by RecordOffline    x.clutch.agent.offline {"agent_id", "last_seen"},
//	                                    idempotency key "clutch.offline/<id>/<last>"
//
// where <last> is the lapsed beat's time in unix nanoseconds, so every
// process that notices one lapse makes the same keys and the store keeps
// one of each. A beat within the TTL of the one before stores nothing. A
// register or update is itself the change: it beats without an event.
// Load (InFlight, SuccessRate) stays in memory and makes no events.
// [Registry.RecordOffline] is the check that notices lapses; a Shared
// registry's Follow runs it every Options.PollInterval, which also reads
// the other processes' beats, so no event per beat needs following.
//
// Open replays the events, then raises each agent's last-seen time to its
// last beat: a restart gives the same Online answers as the process
// before it (the beats live as long as the store keeps them; see the
// store's doc for what a crash may lose — one interval of liveness,
// learned again at the next beat). Over a store without Presence every
// heartbeat is an agent.heartbeat event, as in earlier versions.
//
// docs/protocol.md §2.4 defines register, heartbeat and update but no way for an
// agent to leave, so the removal is an extension type in the x.clutch
// namespace (docs/protocol.md §2.6: anything outside §2 is namespaced x.<vendor>.<name>).
// A reader that does not know it sees an agent that stopped sending
// heartbeats, which is the right approximation.
//
// Open replays the events of Options.RunID in seq order:
//   - agent.register sets the agent's card; an agent registered Local comes
//     back offline, because its handler died with the process that
//     registered it, and stays offline through updates and heartbeats
//     until it is registered again;
//   - agent.update replaces the card of a registered agent and keeps its
//     Local status; an update of an agent not registered at that point is
//     ignored (Update refuses it, so only a foreign writer makes one);
//   - agent.heartbeat refreshes the last-seen time, as register and update
//     do; x.clutch.agent.offline changes nothing that Online reads (the
//     lapse it records is over by time already); x.clutch.agent.remove
//     forgets the agent;
//   - other types in the run are ignored.
//
// Liveness counts from the event's ts, which the writing registry took
// from Options.IDs, the same clock [Registry.Online] reads; the store's
// own append time is not used. There is one clock: by default the
// registry's IDs read the store's clock ([store.ClockOf], the Clock
// option of every in-tree store) and the router takes the registry's IDs
// ([Registry.IDs]), so a test that sets the store's clock, and advances
// it, controls event times, ids and liveness at once (routertest.Clock).
//
// # Errors
//
// All sentinels are in errors.go; match them with errors.Is. Each carries
// a protocol code for [protocol.CodeOf].
//   - [ErrNotFound]: Update, Heartbeat or Remove of an agent that is not
//     registered (NOT_FOUND).
//   - [ErrInvalidCard]: a card that breaks a protocol rule; the error also
//     wraps the *protocol.Error, so errors.Is(err, protocol.CodeInvalidField)
//     and protocol.CodeOf give the precise reason. Nothing is stored.
//   - [ErrInvalidOptions]: from Open, for a negative HeartbeatTTL or PollInterval, a
//     SuccessWindow outside 0..64 or a RunID longer than
//     protocol.MaxIDLength.
//   - [ErrCorruptLog]: from Open, for a registry event that cannot be
//     applied (a register whose payload is not a card, a card sent by
//     another agent); the error is a [*CorruptEventError] naming the seq.
//   - [ErrDuplicateEvent]: the store already holds an event with the id the
//     registry made (two registries given alike-seeded id sources); the
//     call changed nothing.
//   - [ErrSignature]: Verify or Admit refused a message's signature;
//     protocol.CodeOf gives BAD_SIGNATURE or UNKNOWN_KEY. Nothing is stored.
//   - [ErrInvalidMessage]: Admit was given a message it does not take
//     (another type or run, a Local claim, an invalid envelope).
//
// Store errors come back wrapped ("registry: ..."), so errors.Is(err,
// store.ErrClosed) and errors.Is(err, context.Canceled) work; when the
// append fails the registry is unchanged.
//
// # Caveats
//
// Open reads the events of the registry's run, not the whole log, and the
// beats. Over a store with Presence the run holds registrations and
// changes only (100 agents beating every 10 s for a day, with ten
// outages, are 120 events, not 864,000). Over a store without it
// heartbeats are events: N agents beating every T write N/T events for as
// long as they run, and every Open reads them all. Local agents need no
// heartbeats.
//
// A message admitted from outside counts for liveness from the earlier of
// its ts and the registry's clock, so a sender cannot stay online by
// dating its heartbeat in the future; on replay its ts counts, as for
// every event.
//
// After Open a registry sees only its own writes, unless it is opened with
// Options.Shared and runs [Registry.Follow]: then registries over one store
// (in several processes) apply each other's events as they are appended,
// and an agent registered Local by one process is online for the others
// while it heartbeats (team.Join, package router/team, does all of
// this). A Shared registry remembers the seqs of its own writes until
// Follow passes them, so run Follow whenever it is Shared.
//
// Writes are serialised, so that the order of the events in the store is
// the order in which they were applied: on a durable store each write is
// a commit of its own, which bounds how often a very large fleet can
// heartbeat.
//
// Load and success counters live in memory: they are not events, they
// start empty after Open, and they are kept for an agent id after it is
// removed (one small record per id ever registered) so that a new
// registration continues them.
//
// An [*Agent] holds the card it was returned with: after an Update, Get
// the agent again to see the new card and limit. Its counters are shared,
// so a Release through an older *Agent still counts. Release without a
// matching TryAcquire panics, as sync.WaitGroup does for a negative count.
package registry
