package gateway

import (
	"context"
	"errors"
	"net/http"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/internal/httpjson"
	"github.com/clutchprotocol/clutch/store"
)

// serveEvent serves GET /v1/events/{id}: one event, by its message id or,
// when id is a decimal number, by its seq, as {"seq","time","message"}
// (an element of an events page). The caller gets it when an events page
// would show it: it may read the event's run, thread or task (the rule of
// GET /v1/{runs,threads,tasks}/{id}/events). Otherwise, and when there is
// no such event, the answer is 404, so ids of other callers do not leak.
func (g *Gateway) serveEvent(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c := caller(ctx)
	if !c.MayRead() {
		g.writeError(w, r, auth.ErrForbidden)
		return
	}
	if err := params(r.URL.Query()); err != nil {
		g.writeError(w, r, err) // it takes none
		return
	}
	ref := r.PathValue("id")
	notFound := coded.Wrap(ErrNotFound, "no event "+clip(ref), nil)
	ev, err := g.event(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		err = notFound
	}
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	m, err := ev.Message()
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	ok := false
	for _, k := range [...]struct {
		kind auth.Kind
		id   string
	}{{auth.KindRun, m.RunID}, {auth.KindThread, m.ThreadID}, {auth.KindTask, m.TaskID}} {
		if ok || k.id == "" {
			continue
		}
		if ok, err = g.visible(ctx, c, k.kind, k.id); err != nil {
			g.writeError(w, r, err)
			return
		}
	}
	if !ok {
		g.writeError(w, r, notFound)
		return
	}
	httpjson.WriteBody(w, http.StatusOK, append(appendEvent(make([]byte, 0, len(ev.Raw)+64), ev), '\n'))
}

// event returns the event ref names, a seq or a message id, or
// store.ErrNotFound.
func (g *Gateway) event(ctx context.Context, ref string) (store.Event, error) {
	seq, err := parseUint(ref)
	if err != nil {
		if !validID(ref) {
			return store.Event{}, store.ErrNotFound
		}
		return g.st.Get(ctx, ref)
	}
	if seq == 0 {
		return store.Event{}, store.ErrNotFound
	}
	for ev, err := range g.st.Read(ctx, store.Query{AfterSeq: seq - 1, Limit: 1}) {
		if err != nil {
			return store.Event{}, err
		}
		if ev.Seq == seq {
			return ev, nil
		}
	}
	return store.Event{}, store.ErrNotFound
}
