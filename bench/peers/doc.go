// Package peers measures Clutch against two peers on identical work, in one
// `go test -bench` process, and prints each ratio:
//
//   - the in-memory task round trip (a validated task.request routed to an
//     agent whose result comes back to the caller, on memstore) against
//     Watermill's CQRS request/reply (command bus, command handler with a
//     result, GoChannel, a reply topic per operation) and against
//     Watermill's bare router (a message published and handled, no reply);
//   - the durable append (boltstore, fsync before each append returns)
//     against NATS JetStream (embedded server, file storage) with fsync on
//     every write and with its default sync interval;
//   - the durable task round trip (the router on boltstore: request,
//     routing decision, accept and result all stored and fsynced) against
//     a JetStream round trip (request and result both stored, a worker
//     consuming the requests), and against Watermill's in-memory
//     request/reply above (when both ran).
//
// Every side builds its messages per operation, the same way (a protocol
// message of about 1 KiB, encoded once), from 64 concurrent callers. It is
// its own module, so that the library's go.mod does not list the peers;
// `make bench-peers` runs it:
//
//	cd bench/peers && go test -run '^$' -bench . -benchtime 5s
//
// After the benchmarks it prints one line per ratio (Clutch over the
// peer, ops/s over ops/s). Its plain test runs each side once, briefly.
package peers
