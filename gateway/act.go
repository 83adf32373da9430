package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/internal/httpjson"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// cancelBody is what POST /v1/tasks/{id}/cancel takes: an optional reason,
// stored in the task.cancel's message after "cancelled by <caller>".
type cancelBody struct {
	Reason string `json:"reason"`
}

// serveCancel serves POST /v1/tasks/{id}/cancel [{"reason": "…"}]: the
// caller cancels a task it may read (its own, or any with read:all), as
// a task.cancel of POST /v1/messages does. A task that has ended is a
// CONFLICT that retrying does not mend.
func (g *Gateway) serveCancel(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c := caller(ctx)
	var in cancelBody
	if err := decodeBody(r, &in, `{"reason": "…"} or nothing`); err != nil {
		g.writeError(w, r, err)
		return
	}
	s := &Submission{Type: protocol.TypeTaskCancel, TaskID: r.PathValue("id")}
	if in.Reason != "" {
		s.Payload, _ = json.Marshal(map[string]string{"message": in.Reason})
	}
	acc, err := g.submitCancel(ctx, c, s)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, acc)
}

// serveRetry serves POST /v1/tasks/{id}/retry: the caller runs a task it
// may read that ended with task.error or task.timeout again, as a new
// attempt (router.Router.Retry, a partial retry of its run). A task that
// runs, or that completed or was cancelled, is a CONFLICT that retrying
// does not mend.
func (g *Gateway) serveRetry(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c := caller(ctx)
	if err := decodeBody(r, &struct{}{}, "empty (or {})"); err != nil {
		g.writeError(w, r, err)
		return
	}
	id := r.PathValue("id")
	if err := g.checkVisible(ctx, c, auth.KindTask, id); err != nil {
		g.writeError(w, r, err)
		return
	}
	req, err := g.first(ctx, store.Query{TaskID: id, TypePrefix: string(protocol.TypeTaskRequest)})
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	if req == nil {
		g.writeError(w, r, coded.Wrap(ErrNotFound, "task "+clip(id)+" has no task.request here", nil))
		return
	}
	h, err := g.r.Retry(ctx, id)
	switch {
	case errors.Is(err, router.ErrNotRetryable):
		g.writeError(w, r, coded.Wrap(errConflict, "cannot be retried: "+publicMessage(err), nil))
		return
	case err != nil:
		g.writeError(w, r, err)
		return
	}
	out := h.Request()
	httpjson.Write(w, http.StatusAccepted, Accepted{RunID: out.RunID, ThreadID: out.ThreadID, TaskID: out.TaskID})
}

// decodeBody decodes a JSON object body into v, refusing unknown
// members and anything after the object (shape says what the body may
// be); an empty body leaves v as it is, for the caller to refuse when it
// needs one.
func decodeBody(r *http.Request, v any, shape string) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	err = d.Decode(v)
	// encoding/json's words for an unknown member: `json: unknown field "x"`.
	if name, ok := strings.CutPrefix(fmt.Sprint(err), "json: unknown field "); ok {
		return coded.Wrap(ErrUnknownField, "the body has no member "+name+": it must be "+shape, nil)
	}
	if err != nil || d.More() {
		return coded.Wrap(ErrBadRequest, "the body must be "+shape, nil)
	}
	return nil
}
