// Package routertest gives unit tests of agents a router in a few lines:
// an in-memory store, deterministic ids, a clock the test moves, and
// helpers that read back the events and routing decisions a task left.
//
//	env := routertest.New(t, nil)
//	env.Agent("agent:ken", []string{"skill:research"}, myHandler)
//	out, err := env.Run(env.Request("research.query.v1", query, "skill:research"))
//	env.AssertTypes(out.TaskID, "task.request", "routing.decision", "task.accept", "task.result")
//
// Everything runs in memory: no disk, no network. The router is closed
// when the test ends, and the test fails then unless every task in the
// store has exactly one terminal event (Env.AssertOneTerminal) and every
// handler returned within router.DefaultCloseTimeout.
//
// An agent that asks (router.Task.Ask) is as easy to test: set scripted
// answers with Env.OnQuestion and Run answers every question as the
// task's requester, or take the waiting outcome Run returns and answer it
// with Env.Answer. A test that leaves a task waiting fails at its end like
// one that leaves a task running: answer or cancel it.
//
//	env.OnQuestion(func(q *protocol.Question) any { return "fintech" })
//	out, err := env.Run(req) // the handler ran twice: asked, then answered
//
// Two functions read a run's events for assertions, with or without an
// Env: Sequence renders them as types, tool events paired by call id
// ("tool.call weather #1", "tool.result weather #1"), and Streamed gives
// the texts a router.TextStream stored, in order.
//
// Env.Clock is the one clock of the Env (see Clock in the router package
// doc): the router, the registry and the store read it, so timestamps,
// ids and heartbeat liveness move only when the test moves it. Timers
// (max_runtime_sec, backoff, queue timeout, a question's deadline — armed
// for its distance from the clock's reading — and Run's own Timeout) run
// on real time; test them inside a testing/synctest bubble, creating the
// Env there too.
package routertest
