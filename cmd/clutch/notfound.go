package main

import (
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
type notFoundError struct{ kind, id string }

// Error says which: `run "run_X" not found`.
func (e *notFoundError) Error() string { return e.kind + " " + strconv.Quote(e.id) + " not found" }

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
// (NOT_FOUND) and store.ErrNotFound — into notFound(kind, id); any other
// error is returned as it is.
func notFoundAs(err error, kind, id string) error {
	var ce *client.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce) && (ce.Status == http.StatusNotFound || ce.Code == protocol.CodeNotFound):
		return notFound(kind, id)
	case errors.Is(err, store.ErrNotFound):
		return notFound(kind, id)
	}
	return err
}
