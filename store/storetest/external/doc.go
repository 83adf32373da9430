// Package externalstore is an event store written outside the Clutch
// module, with only its exported packages: store for the contract and
// store/driver for the rules. It is the plainest store that passes
// store/storetest — a slice, a few maps and one mutex — and it does not
// implement store.Lister, so store.Runs and store.Threads project its
// summaries from the log.
//
// It lives in a module of its own (module example.com/externalstore, with
// a replace of the Clutch module to this repository), so Go's rule on
// internal packages keeps it to what any third party can import. Run it
// with `make test-external` at the repository root.
package externalstore
