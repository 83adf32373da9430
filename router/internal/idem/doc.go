// Package idem names the idempotency keys the router and its team
// (package router/team) put on the events they store, so that the
// store's (run_id, idempotency_key) deduplication (docs/protocol.md §5.2)
// lets exactly one of each in, whichever process stores it.
//
// Every namespace the two packages use is here, one function each, and
// nowhere else. The keys are part of the stored log: existing stores
// hold them, so a key's bytes never change. A new namespace starts with
// "clutch." and is added here.
package idem
