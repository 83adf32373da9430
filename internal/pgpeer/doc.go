// Package pgpeer starts throwaway PostgreSQL clusters for the module's
// tests, benchmarks and examples: initdb in a fresh temporary folder, a
// server listening only on a unix socket in that folder (no TCP port, so
// concurrent test binaries never collide), and pg_ctl stop at the end.
// As root (CI, containers) the server binaries run as the "postgres" user
// the Debian package creates, since initdb refuses to run as root.
//
// The rule for a missing PostgreSQL is the one of every real peer in the
// tests: under CI=true it fails the test, anywhere else the test is
// skipped with what is missing and how to install it (`make deps`).
package pgpeer
