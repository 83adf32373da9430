// Package fanout shares one follower of a store among every live reader
// of a surface (the gateway's SSE and WebSocket streams, AG-UI, A2A): an
// append wakes one goroutine, not one per open stream, so what a writer
// pays for an append does not grow with the number of streams.
//
// # Basics
//
// New(st, nil) returns a Hub; Hub.Follow has the contract of
// store.Store.Follow (docs/protocol.md §8.1): the backlog after
// q.AfterSeq, then every new matching event, each exactly once and in seq
// order, ending without an error when ctx ends or after q.Limit events,
// and with store.ErrClosed when the store is closed. While it has readers
// the hub runs one store.Follow of the whole log and hands each event to
// the readers whose query it matches (run, thread, task, agent, type
// prefix); with none it runs nothing.
//
// # Slow readers
//
// Each reader has a bounded buffer (Options.Events, Options.Bytes). The
// hub never waits for a reader: one whose buffer is full is dropped from
// the hub, takes what its buffer holds, then reads the store from the
// last seq it yielded and joins again, so it loses no event and repeats
// none, and costs the writer and the other readers nothing. Whether a
// reader that stays behind is cut off is its surface's choice (the
// gateway cuts a slow client off; see its doc).
package fanout
