package memstore

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// ErrInvalidOptions: New was given options it cannot use.
var ErrInvalidOptions error = coded.New("memstore: invalid options", protocol.CodeInvalidField)

type optionError struct{ detail string }

func (e *optionError) Error() string { return ErrInvalidOptions.Error() + ": " + e.detail }
func (e *optionError) Unwrap() error { return ErrInvalidOptions }

// errTooManyKeys is returned by Append when the store has interned as many
// distinct run, thread, task and agent ids as it indexes (64 Mi); it
// matches store.ErrTooLarge.
var errTooManyKeys = coded.Wrap(store.ErrTooLarge, "memstore: the store indexes at most 64 Mi distinct run, thread, task and agent ids", nil)

// errTooManyEvents is returned by Append when the store holds as many
// events as it can index (2^32 - 1); it matches store.ErrTooLarge.
var errTooManyEvents = coded.Wrap(store.ErrTooLarge, "memstore: the store holds at most 2^32 - 1 events", nil)

// errTooManyTypes is returned by Append for a message of a new type when
// the store has numbered 2^32-1 distinct event types; it matches
// store.ErrTooLarge.
var errTooManyTypes = coded.Wrap(store.ErrTooLarge, "memstore: the store numbers at most 2^32-1 distinct event types", nil)
