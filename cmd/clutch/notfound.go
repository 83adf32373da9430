package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// notFoundError is the answer when what the command line names (a run,
// thread, task, event, agent or question) does not exist or the caller
// may not see it: exit code 3 (exitNotFound), with the same text whether
// the command reads a file or a gateway.
type notFoundError struct {
	kind, id string
	removed  *store.Tombstone // a run removed by retention: what became of it
}

// Error says which: `run "run_X" not found`, or for a removed run what
// became of it: `run "run_X" was removed at … by policy "…"`.
func (e *notFoundError) Error() string {
	if e.removed != nil {
		return e.kind + " " + strconv.Quote(e.id) + " " + e.removed.Describe()
	}
	return e.kind + " " + strconv.Quote(e.id) + " not found"
}

// ClutchCode is NOT_FOUND, for protocol.CodeOf.
func (e *notFoundError) ClutchCode() protocol.Code { return protocol.CodeNotFound }

// Is matches protocol.CodeNotFound.
func (e *notFoundError) Is(target error) bool {
	c, ok := target.(protocol.Code)
	return ok && c == protocol.CodeNotFound
}

// notFound is the error of a kind ("run", "thread", "task", ...) and id
// named on the command line that does not exist.
func notFound(kind, id string) error { return &notFoundError{kind: kind, id: id} }

// isNotFound reports whether err says that what the command line names
// does not exist (exit 3).
func isNotFound(err error) bool {
	var nf *notFoundError
	return errors.As(err, &nf)
}

// notFoundAs turns the not-found answers of either mode — a gateway's 404
// (NOT_FOUND) and store.ErrNotFound — into notFound(kind, id), and a
// removed run's (a *store.RemovedError, or a 404 whose details hold the
// tombstone) into one that says what became of it; any other error is
// returned as it is.
func notFoundAs(err error, kind, id string) error {
	var ce *client.Error
	var re *store.RemovedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re):
		return &notFoundError{kind: kind, id: id, removed: &re.Tombstone}
	case errors.As(err, &ce) && (ce.Status == http.StatusNotFound || ce.Code == protocol.CodeNotFound):
		return &notFoundError{kind: kind, id: id, removed: tombstoneOf(ce)}
	case errors.Is(err, store.ErrNotFound):
		return notFound(kind, id)
	}
	return err
}

// tombstoneOf reads the tombstone of a gateway's answer about a removed
// run (details {"removed": tombstone}); nil when it has none.
func tombstoneOf(ce *client.Error) *store.Tombstone {
	raw, ok := ce.Details["removed"]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var t store.Tombstone
	if json.Unmarshal(b, &t) != nil || t.RunID == "" {
		return nil
	}
	return &t
}
