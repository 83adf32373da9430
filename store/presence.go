package store

import (
	"context"
	"iter"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// Presence is the upgrade interface of a Store that keeps current state
// that is not an event: the last beat of each key (an agent, a node),
// replacing the one before. Liveness is such state: a heartbeat says "still
// here", and only a change (online, offline) is worth an event of the log
// (docs/protocol.md §2.4). Beats are not in Read or Follow, have no seq,
// and take one row per key whatever the number of beats, so a fleet that
// beats all day does not grow the log. [PresenceOf] finds it; the in-tree
// stores implement it, and storetest checks every store that does.
//
// Durability is the backend's to state: a beat lost in a crash is learned
// again at the holder's next beat, one interval later.
type Presence interface {
	// Beat records a beat of key with data (nil for none; kept as given,
	// at most MaxBeatData bytes), replacing the key's previous beat, and
	// returns its time, from the store's clock (see [Clock]) as the store
	// keeps it, and the beat it replaced (the zero Beat when there was
	// none). Beats of one key are atomic: of two concurrent beats one
	// replaces the other and returns it. A key that
	// [CheckBeat] refuses gives an error matching ErrInvalidKey (or
	// ErrTooLarge for data), and nothing is recorded.
	Beat(ctx context.Context, key string, data []byte) (at time.Time, prev Beat, err error)

	// Beats returns the last beat of every key that starts with prefix
	// ("" for all), in key order, as they are when the loop starts. An
	// error ends the sequence after being yielded once.
	Beats(ctx context.Context, prefix string) iter.Seq2[Beat, error]
}

// Beat is the last beat of a key (see [Presence]).
type Beat struct {
	Key  string
	Time time.Time // from the store's clock, UTC
	Data []byte    // as given to Beat; do not modify it
}

// Limits of a beat, which every Presence enforces (see [CheckBeat]).
const (
	// MaxBeatKey is the longest key, in bytes: an id's length
	// (protocol.MaxIDLength) and a short prefix fit.
	MaxBeatKey = 512
	// MaxBeatData is the most data a beat carries, in bytes: a beat is a
	// small status, anything larger belongs in an event.
	MaxBeatData = 4096
)

// ErrInvalidKey: a presence key is empty, too long, not UTF-8 or holds a
// control character (see [KeyError]).
var ErrInvalidKey error = coded.New("store: invalid presence key", protocol.CodeInvalidField)

// KeyError reports a presence key that [CheckBeat] refused. It matches
// ErrInvalidKey and protocol.CodeInvalidField.
type KeyError struct {
	Key    string // the key, cut to MaxBeatKey bytes
	Detail string // what is wrong with it
}

// Error names the key and the problem.
func (e *KeyError) Error() string {
	return "store: presence key " + strconv.Quote(e.Key) + " " + e.Detail
}

// Is matches ErrInvalidKey and protocol.CodeInvalidField.
func (e *KeyError) Is(target error) bool {
	return target == ErrInvalidKey || target == protocol.CodeInvalidField
}

// ClutchCode returns protocol.CodeInvalidField, for protocol.CodeOf.
func (e *KeyError) ClutchCode() protocol.Code { return protocol.CodeInvalidField }

// CheckBeat reports whether a beat of key with data may be recorded: a key
// of 1 to MaxBeatKey bytes of UTF-8 without control characters (a
// *[KeyError]), data of at most MaxBeatData bytes (a *[TooLargeError]
// with What "beat"). Backends call it first in Beat.
func CheckBeat(key string, data []byte) error {
	bad := func(detail string) error {
		k := key
		if len(k) > MaxBeatKey {
			k = k[:MaxBeatKey]
		}
		return &KeyError{Key: k, Detail: detail}
	}
	switch {
	case key == "":
		return bad("is empty")
	case len(key) > MaxBeatKey:
		return bad("is " + strconv.Itoa(len(key)) + " bytes, limit " + strconv.Itoa(MaxBeatKey))
	case !utf8.ValidString(key):
		return bad("is not valid UTF-8")
	}
	for _, r := range key {
		if unicode.IsControl(r) {
			return bad("holds a control character")
		}
	}
	if len(data) > MaxBeatData {
		return &TooLargeError{What: "beat", Index: -1, Size: len(data), Limit: MaxBeatData}
	}
	return nil
}

// PresenceOf returns the Presence of s, or of a store it wraps (through a
// chain of wrappers that each have a method Unwrap() Store), or nil when
// there is none.
func PresenceOf(s Store) Presence {
	p, _ := upgrade[Presence](s)
	return p
}
