// Package team makes routers in several processes (or machines) that
// share one store — a store/pgstore database — work as one team. Join
// plugs a router into the team through the router's hook
// (router.SetTeam, see "Teams" in package router); Node.Leave takes it
// out. The processes exchange extension events through the store
// (docs/protocol.md §2.6): TypeDispatch, TypeClaim, TypeDone, TypeOwner
// and TypeNodeHeartbeat.
//
// # Basics
//
//	reg, _ := registry.Open(ctx, st, &registry.Options{Shared: true})
//	r, _ := router.New(st, reg, &router.Options{Validator: schemas})
//	n, err := team.Join(ctx, r, nil)
//	...
//	n.AwaitAgents(ctx, []string{"skill:research"}, 1) // the workers are up
//	h, _ := r.Submit(ctx, req)                         // routed over the whole team
//	...
//	n.Leave() // before r.Close()
//
// # Dispatch
//
// Routers in several processes that share one store form one team:
// Join makes a router a Node.
// Each process opens its registry with registry.Options.Shared; the
// node follows the other processes' registry events, so every process
// sees every agent, its card and its liveness, and the agents registered
// in a process send heartbeats (Options.HeartbeatInterval) so that
// the others see them online.
//
// A task is routed by the process it is submitted in, as in one process, over all
// the team's agents. When the selected agent is hosted in that process
// and has room, the task costs two commits there, as in one process
// (docs/protocol.md §5.1): its task.request, owner event,
// routing.decision and task.accept in one batch, then its end — unless
// the team counts Budget.MaxTasks, whose count needs the request stored
// first. An agent hosted elsewhere has a handler here that
// dispatches the attempt (an x.clutch.task.dispatch event, stored
// together with the attempt's routing.decision and task.accept). The
// process hosting the agent claims the attempt with an
// x.clutch.task.claim event whose idempotency key is the task id and
// attempt: the store's (run_id, idempotency_key)
// deduplication lets exactly one claim in, so exactly one process runs
// each attempt even when several host the same agent id. It runs the
// handler with a Task like any other (Progress, Emit, PutArtifact,
// Delegate: subtasks are routed by the hosting process, with the depth
// and delegation chain the dispatch carried, so budgets and cycle checks
// hold across processes), then stores the outcome as an
// x.clutch.task.done event. The routing process, which follows the store,
// stores the terminal event from it, validated as a local result would
// be: Wait, retries, timeouts and cancellation work as in one process. A
// cancel or timeout stored by the routing process ends the handler in the
// hosting one, and with it the subtasks it delegated. An agent's
// max_concurrency is enforced where it runs, for the attempts of every
// process (one waits there up to QueueTimeout, then fails with CAPACITY,
// retryable); the load tie-breaker sees the attempts this process
// dispatched. Budget.MaxDepth holds across processes (the dispatch carries
// the depth). Budget.MaxTasks holds for the whole team: a run's tasks are
// its task.request events in the shared store — the root and every
// subtask, whichever process routed it — and a task's place in its run is
// the number of them up to its own request, in the store's seq order,
// which is the same for every process. A task whose place is past
// MaxTasks ends with BUDGET, as in one process, wherever it is routed;
// it counts all the same (its request is stored). A retry stores no new
// request and a redelivery is not stored, so neither counts; a task's
// place never changes, so Retry of a task refused for the budget refuses
// it again. In a team
// the count covers the run's whole log, not only the tasks running now
// (see Caveats). Each process applies its own MaxTasks to the tasks it
// routes, so the processes of a team set the same. Before routing a task
// of a run, a process reads the run's requests it has not read yet, at
// most MaxTasks of them; a failed read ends the task with the store's
// error (retryable when the store is unavailable).
//
// # Adoption
//
// A process that dies (kill -9) stops heartbeating; after the registry's
// HeartbeatTTL its agents are offline for everyone, and each attempt
// another process dispatched to them ends with INTERRUPTED: retryable
// under RecoverRedispatch, so the router routes it again to an agent that
// is online (a survivor), final under RecoverFail. No attempt is lost and
// the task still ends once.
//
// The tasks a dead process routed are adopted by the survivors. Each node
// sends a heartbeat every HeartbeatInterval: over a store with
// store.Presence (every in-tree store) a beat of the key
// "<NodesRunID>/<node>", which the others read every CheckInterval (and
// before Recover and a redelivery decide), and no event; over another
// store a TypeNodeHeartbeat event (run_id NodesRunID). The agents'
// heartbeats are beats too (package registry, "Liveness as state"). A
// node none of whose heartbeats arrived for HeartbeatTTL is dead (timed
// where they arrive, a beat when a poll finds it changed: the processes'
// clocks need not agree). The
// node a task is submitted to routes it, and says so with a TypeOwner
// event stored together with the task.request (and again when Retry runs
// the task in another process). Every CheckInterval each node looks at
// the open tasks it saw routed by other nodes since it joined, and adopts
// those of dead nodes: it stores a TypeOwner event with idempotency key
// "clutch.adopt/<task id>/<dead node>", which the store lets in once, so
// exactly one survivor adopts each task. The adopter then, by what the
// log holds about the task's last attempt:
//
//   - the task ended meanwhile: nothing;
//   - the worker stored the attempt's outcome (x.clutch.task.done): it
//     stores the task's terminal event from it, validated as a local
//     result, or, for a retryable error with attempts left, routes the
//     next attempt;
//   - the attempt still runs in another process whose agent is online:
//     it waits for the outcome as the dead process would have (and
//     applies the recovery policy if that agent goes offline too);
//   - the attempt ran in the dead process, or its retry had not started:
//     router.Options.Recovery of the adopter — RecoverRedispatch routes a new
//     attempt, RecoverFail ends the task with a retryable INTERRUPTED
//     task.error;
//   - the task was never routed (it waited for capacity): it routes it;
//   - a subtask delegated by a handler that ran in the dead process (its
//     parent's attempt died there) ends with task.cancel, as a subtask
//     does when its parent's attempt ends in one process; the parent's
//     router retries or fails the parent as above.
//
// Fencing (package router): every terminal event the router stores carries the
// idempotency key "clutch.end/<task id>/<attempt>", so the store lets
// exactly one end of an attempt in, whichever process stores it; a router
// whose end was refused as a duplicate takes the stored end as the
// task's outcome. A process presumed dead that was only paused past the
// TTL therefore never ends an attempt a second time, but it may still
// start a new attempt of a task it no longer owns (at-least-once, as
// after any retry).
//
// The Handles of the dead process die with it. Another process gets the
// outcome from the log (store Follow by task id for its terminal event),
// or by submitting the same request again: in a team, a redelivered
// request of an open task that does not run here gives a handle that
// follows the task's end in the log while the node routing it is alive
// (its Cancel does nothing: cancel in the owner's process), and makes
// this node adopt the task when that node is dead.
//
// Live adoption covers the tasks a node saw routed since it joined. A
// process that starts after others died calls Router.Recover once, after Join:
// in a team it waits one HeartbeatTTL (to hear the live nodes'
// heartbeats), then scans the log and adopts, as above, each open task
// whose owner is dead or unknown (routed by a router that was no node) —
// never one a live node routes. Several processes may call it at once.
//
// # Asking a person
//
// A handler that asks (router.Task.Ask, docs/protocol.md §2.7) in the
// process hosting its agent stores its task.question there; the attempt's
// done event carries INPUT_REQUIRED with the question's id, and the task
// waits in the process that routed it (router.Member.Wait), holding no
// goroutine anywhere. Any process of the team may answer
// (router.Router.Answer): the answering process records itself as the
// task's owner and routes the resumed attempt, which runs in the hosting
// process again; the other processes forget the wait when the task.answer
// reaches them. A waiting task whose routing process dies is adopted like
// any other open task, as a task that waits (the adopter arms its
// deadline; no handler runs), and one answered but not run on since is
// resumed by its adopter. A subtask cannot ask, in any process.
//
// # Caveats
//
// The max_runtime_sec of an adopted attempt that runs in another
// process is enforced there (the handler's context ends and its error
// comes back), but no task.timeout is stored for it; adoption is not
// refused by the adopter's router.Options.MaxInFlight (it counts there while it
// runs); a node sends its heartbeat after its agents', so that an agent
// of a dead node is offline by the time the node is found dead, but with
// clocks that disagree across machines an adopter may still route to it
// once (that attempt then ends with INTERRUPTED, retried under
// RecoverRedispatch); over a store without store.Presence the node
// heartbeats are events of the log (run NodesRunID, one per node every
// HeartbeatInterval), listed with the other runs. Node.Leave
// answers the attempts running here with INTERRUPTED and stops the
// heartbeats; call it before Close. A process that Closes its router
// ends the tasks it routes (INTERRUPTED) rather than leaving them to be
// adopted.
//
// # Errors
//
// The package has no sentinels of its own: Join fails with
// router.ErrInvalidOptions (a registry that is not Shared, a router in a
// team already), and a task's failure is a *protocol.ErrorPayload as in
// package router (INTERRUPTED when a process goes away, CAPACITY when a
// hosting process stays full, BUDGET past Budget.MaxTasks).
package team
