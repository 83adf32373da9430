package pgstore

import (
	"regexp"
	"time"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/store"
)

// Options configures Open. Nil means defaults; zero fields take defaults.
type Options struct {
	// Schema is the PostgreSQL schema (namespace) that holds the store's
	// tables, created when missing; "clutch" when "". Stores in different
	// schemas of one database are independent. A lower-case identifier:
	// letters, digits and underscores, at most 63 bytes.
	Schema string
	// MaxConns is the most connections the pool opens; 16 when 0. The
	// store holds one more, for LISTEN.
	MaxConns int32
	// StatementTimeout bounds every statement on the server, including
	// the wait for the append lock; 30s when 0. A statement past it
	// fails with ErrTimeout.
	StatementTimeout time.Duration
	// PollInterval is how often followers look for new events when no
	// notification arrived (a lost LISTEN connection, a notification
	// the server dropped); 1s when 0.
	PollInterval time.Duration
	// MaxBatch is the most events one group commit takes; 1024 when 0. An
	// Append call is never split.
	MaxBatch int
	// MaxEventSize is the largest encoded message accepted, in bytes;
	// store.DefaultMaxEventSize when 0.
	MaxEventSize int
	// MaxArtifactSize is the largest artifact accepted, in bytes;
	// store.DefaultMaxArtifactSize when 0 (PostgreSQL's bytea holds at
	// most 1 GiB).
	MaxArtifactSize int
	// Clock gives event times; time.Now when nil. An event's time never
	// goes below the previous event's, whatever the clocks of the
	// processes appending.
	Clock func() time.Time
}

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (o *Options) validate() error {
	switch {
	case o.Schema != "" && !schemaName.MatchString(o.Schema):
		return invalidOption("Schema must be a lower-case identifier (letters, digits, _; at most 63 bytes)")
	case o.MaxConns < 0:
		return invalidOption("MaxConns must not be negative")
	case o.StatementTimeout < 0:
		return invalidOption("StatementTimeout must not be negative")
	case o.PollInterval < 0:
		return invalidOption("PollInterval must not be negative")
	case o.MaxBatch < 0:
		return invalidOption("MaxBatch must not be negative")
	case o.MaxEventSize < 0:
		return invalidOption("MaxEventSize must not be negative")
	case o.MaxArtifactSize < 0 || o.MaxArtifactSize > 1<<30-1:
		return invalidOption("MaxArtifactSize must be from 0 to 1 GiB")
	}
	return nil
}

func invalidOption(detail string) error { return coded.Wrap(ErrInvalidOptions, detail, nil) }

func (o *Options) setDefaults() {
	if o.Schema == "" {
		o.Schema = "clutch"
	}
	if o.MaxConns == 0 {
		o.MaxConns = 16
	}
	if o.StatementTimeout == 0 {
		o.StatementTimeout = 30 * time.Second
	}
	if o.PollInterval == 0 {
		o.PollInterval = time.Second
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = 1024
	}
	if o.MaxEventSize == 0 {
		o.MaxEventSize = store.DefaultMaxEventSize
	}
	if o.MaxArtifactSize == 0 {
		o.MaxArtifactSize = store.DefaultMaxArtifactSize
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
}
