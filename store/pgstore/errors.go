package pgstore

import (
	"strconv"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of pgstore. The store contract's own errors
// (store.ErrClosed, store.ErrNotFound, ...) apply as well.
var (
	// ErrUnavailable: the database could not be reached, or the
	// connection broke (a restart, a failover, a network fault). It is
	// retryable (code DEPENDENCY, docs/protocol.md §5.4): an Append that
	// fails with it stored all of its batch or nothing, and appending the
	// same messages again is safe (deduplication).
	ErrUnavailable error = coded.New("pgstore: database unavailable", protocol.CodeDependency)
	// ErrTimeout: a statement ran past Options.StatementTimeout, or waited
	// past it for a lock. Retryable (code TIMEOUT).
	ErrTimeout error = coded.New("pgstore: statement timeout", protocol.CodeTimeout)
	// ErrSchema: the database holds a schema this package cannot use: a
	// newer version (see [SchemaError]), or tables of something else.
	ErrSchema error = coded.New("pgstore: unsupported schema", protocol.CodeUnsupportedVersion)
	// ErrDatabase: the database refused a statement for another reason
	// (permissions, a full disk, a bug). The cause is the *pgconn.PgError.
	ErrDatabase error = coded.New("pgstore: database error", protocol.CodeInternal)
	// ErrInvalidOptions: Open was given options it cannot use.
	ErrInvalidOptions error = coded.New("pgstore: invalid options", protocol.CodeInvalidField)
)

// SchemaError reports a database schema Open refuses. It matches
// ErrSchema.
type SchemaError struct {
	Schema    string // the PostgreSQL schema (namespace) of the store
	Version   int    // the version found
	Supported int    // the newest version this package knows
}

// Error says which version was found and that a newer Clutch is needed.
func (e *SchemaError) Error() string {
	return "pgstore: schema " + strconv.Quote(e.Schema) + " is at version " + strconv.Itoa(e.Version) +
		", newer than the " + strconv.Itoa(e.Supported) + " this package knows; use a newer Clutch"
}

// Unwrap returns ErrSchema.
func (e *SchemaError) Unwrap() error { return ErrSchema }

// ClutchCode returns protocol.CodeUnsupportedVersion, for protocol.CodeOf.
func (e *SchemaError) ClutchCode() protocol.Code { return protocol.CodeUnsupportedVersion }
