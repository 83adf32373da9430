package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/internal/httpjson"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// first returns the first event matching q, decoded, or nil.
func (g *Gateway) first(ctx context.Context, q store.Query) (*protocol.Message, error) {
	q.Limit = 1
	for ev, err := range g.st.Read(ctx, q) {
		if err != nil {
			return nil, err
		}
		return ev.Message()
	}
	return nil, nil
}

// visible reports whether the run, thread or task id exists and the
// caller may see it: auth.MayRead, the one rule of docs/protocol.md §6.7
// (what the caller owns, everything with auth.ScopeReadAll, reserved
// system ids only with auth.ScopeAdmin). What it may not see is answered
// as what does not exist.
func (g *Gateway) visible(ctx context.Context, c *auth.Caller, k auth.Kind, id string) (bool, error) {
	if !validID(id) {
		return false, nil
	}
	return auth.MayRead(ctx, g.st, c, k, id)
}

// checkVisible is visible as an error: ErrNotFound, or a store error.
func (g *Gateway) checkVisible(ctx context.Context, c *auth.Caller, sc auth.Kind, id string) error {
	if !c.MayRead() {
		return auth.ErrForbidden
	}
	ok, err := g.visible(ctx, c, sc, id)
	if err != nil {
		return err
	}
	if !ok {
		return coded.Wrap(ErrNotFound, "no "+sc.String()+" "+clip(id), nil)
	}
	return nil
}

// ---- GET /v1/agents

type wireAgent struct {
	Card        *protocol.AgentCard `json:"card"`
	Online      bool                `json:"online"`
	InFlight    int                 `json:"in_flight"`
	SuccessRate float64             `json:"success_rate"`
}

func (g *Gateway) serveAgents(w http.ResponseWriter, r *http.Request) {
	if !caller(r.Context()).Has(auth.ScopeAgents) {
		g.writeError(w, r, auth.ErrForbidden)
		return
	}
	reg := g.r.Registry()
	out := []wireAgent{}
	for _, a := range reg.List() {
		out = append(out, wireAgent{Card: a.Card(), Online: reg.Online(a), InFlight: a.InFlight(), SuccessRate: a.SuccessRate()})
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"agents": out})
}

// ---- GET /v1/runs, /v1/threads

// wireSummary is a store.Summary with the API's time format: its Created
// and Updated hide the embedded ones.
type wireSummary struct {
	store.Summary
	Created string `json:"created"`
	Updated string `json:"updated"`
}

func wireSummaryOf(s store.Summary) wireSummary {
	return wireSummary{Summary: s, Created: formatTime(s.Created), Updated: formatTime(s.Updated)}
}

// formatTime is RFC 3339 in UTC with milliseconds, the API's one time
// format.
func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// listScan bounds the summaries one listing reads for a caller that sees
// only its own: past it the page ends early, and next_before lets the
// client go on.
const listScan = 10000

func (g *Gateway) serveList(threads bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := caller(r.Context())
		if !c.MayRead() {
			g.writeError(w, r, auth.ErrForbidden)
			return
		}
		q, err := parseListQuery(r.URL.Query())
		if err != nil {
			g.writeError(w, r, err)
			return
		}
		list, name := store.Runs, "runs"
		if threads {
			list, name = store.Threads, "threads"
		}
		// Everybody's with read:all; the reserved system runs (the
		// registry's, the rules library's; docs/protocol.md §6.7) only for
		// an admin that asks with system=1, so nobody's list is cluttered
		// with them by default.
		all, admin := c.Has(auth.ScopeReadAll), c.Has(auth.ScopeAdmin)
		system := admin && q.System
		sq := store.ListQuery{Before: q.Before}
		if system {
			sq.Limit = q.Limit
		}
		out := []wireSummary{}
		var next uint64
		scanned := 0
		for s, err := range list(r.Context(), g.st, sq) {
			if err != nil {
				g.writeError(w, r, err)
				return
			}
			scanned++
			if system || (!protocol.Reserved(s.ID) && (admin || all || c.AgentID == s.Owner)) {
				out = append(out, wireSummaryOf(s))
			}
			if len(out) == q.Limit {
				next = s.LastSeq
				break
			}
			if !admin && scanned >= listScan {
				next = s.LastSeq
				break
			}
		}
		httpjson.Write(w, http.StatusOK, map[string]any{name: out, "next_before": next})
	}
}

// ---- GET /v1/{runs,threads,tasks}/{id}/events, /v1/runs/{id}/decisions

func (g *Gateway) serveEvents(sc auth.Kind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		g.events(w, r, sc, "")
	}
}

func (g *Gateway) serveDecisions(w http.ResponseWriter, r *http.Request) {
	g.events(w, r, auth.KindRun, "routing.")
}

func (g *Gateway) events(w http.ResponseWriter, r *http.Request, sc auth.Kind, prefix string) {
	ctx := r.Context()
	id := r.PathValue("id")
	q, err := parsePageQuery(r.URL.Query())
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	if err := g.checkVisible(ctx, caller(ctx), sc, id); err != nil {
		g.writeError(w, r, err)
		return
	}
	sq := sc.Query(id)
	sq.AfterSeq, sq.Limit, sq.TypePrefix = q.After, q.Limit, q.Type
	if prefix != "" {
		if q.Type != "" && !strings.HasPrefix(q.Type, prefix) {
			sq.TypePrefix = "\x00" // nothing of another family
		} else if q.Type == "" {
			sq.TypePrefix = prefix
		}
	}
	buf := make([]byte, 0, 4096)
	buf = append(buf, `{"events":[`...)
	n, full := 0, false
	var last uint64
	for ev, err := range g.st.Read(ctx, sq) {
		if err != nil {
			g.writeError(w, r, err)
			return
		}
		if n > 0 && len(buf)+len(ev.Raw) > MaxPageBytes {
			full = true // the page ends early; next_after goes on from here
			break
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = appendEvent(buf, ev)
		n++
		last = ev.Seq
	}
	next := uint64(0)
	if n == q.Limit || full {
		next = last
	}
	buf = append(buf, `],"next_after":`...)
	buf = strconv.AppendUint(buf, next, 10)
	buf = append(buf, "}\n"...)
	httpjson.WriteBody(w, http.StatusOK, buf)
}

// appendEvent appends the API's JSON of an event: {"seq","time","message"},
// the message being the stored bytes as they are.
func appendEvent(b []byte, ev store.Event) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, ev.Seq, 10)
	b = append(b, `,"time":"`...)
	b = ev.Time.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
	b = append(b, `","message":`...)
	b = append(b, ev.Raw...)
	return append(b, '}')
}

// ---- GET /v1/runs/{id}/tree, /v1/tasks/{id}/tree

// wireTask is one task (TaskNode) of a tree answer.
type wireTask struct {
	TaskID       string                 `json:"task_id"`
	ParentTaskID string                 `json:"parent_task_id,omitempty"`
	AgentID      string                 `json:"agent_id,omitempty"`
	Status       string                 `json:"status"`
	State        protocol.Type          `json:"state"`
	Attempts     int                    `json:"attempts"`
	PayloadType  string                 `json:"payload_type,omitempty"`
	Started      string                 `json:"started,omitempty"`
	Ended        string                 `json:"ended,omitempty"`
	Error        *protocol.ErrorPayload `json:"error,omitempty"`
	Children     []wireTask             `json:"children"`
}

func wireTaskOf(n *router.TaskNode) wireTask {
	t := wireTask{
		TaskID: n.TaskID, ParentTaskID: n.ParentTaskID, AgentID: n.Agent, State: n.State,
		Attempts: n.Attempts, Children: []wireTask{},
	}
	if n.Request != nil {
		t.PayloadType, t.Started = n.Request.PayloadType, n.Request.TS
	}
	var end protocol.Type
	if n.Outcome != nil {
		end, t.Error = n.Outcome.Type, n.Outcome.Err
		if n.Outcome.Message != nil {
			t.Ended = n.Outcome.Message.TS
		}
	}
	t.Status = store.TaskStatus(n.State, end)
	for _, ch := range n.Children {
		t.Children = append(t.Children, wireTaskOf(ch))
	}
	return t
}

func (g *Gateway) serveTree(sc auth.Kind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		id := r.PathValue("id")
		if err := g.checkVisible(ctx, caller(ctx), sc, id); err != nil {
			g.writeError(w, r, err)
			return
		}
		runID := id
		if sc == auth.KindTask {
			m, err := g.first(ctx, store.Query{TaskID: id})
			if err != nil {
				g.writeError(w, r, err)
				return
			}
			runID = m.RunID
		}
		tree, err := router.Replay(ctx, g.st, runID)
		if err != nil {
			g.writeError(w, r, err)
			return
		}
		out := []wireTask{}
		if sc == auth.KindTask {
			if n := tree.Tasks[id]; n != nil {
				out = append(out, wireTaskOf(n))
			}
		} else {
			for _, n := range tree.Roots {
				out = append(out, wireTaskOf(n))
			}
		}
		httpjson.Write(w, http.StatusOK, map[string]any{"run_id": runID, "tasks": out})
	}
}

// ---- GET /v1/artifacts/{ref}

// serveArtifact serves an artifact's bytes. A content address is a
// capability: whoever may read anything and knows the ref (from an event
// it can see) gets the bytes.
func (g *Gateway) serveArtifact(w http.ResponseWriter, r *http.Request) {
	if !caller(r.Context()).MayRead() {
		g.writeError(w, r, auth.ErrForbidden)
		return
	}
	a, err := g.st.GetArtifact(r.Context(), r.PathValue("ref"))
	if errors.Is(err, store.ErrInvalidRef) {
		err = coded.Wrap(ErrBadRequest, "not an artifact ref (artifact:sha256:<64 hex digits>)", nil)
	} else if errors.Is(err, store.ErrNotFound) {
		err = coded.Wrap(ErrNotFound, "no such artifact", nil)
	}
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.MediaType)
	h.Set("X-Content-Type-Options", "nosniff")
	// Never run as a page of the gateway's origin, whatever it holds.
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Cache-Control", "private, max-age=31536000, immutable")
	h.Set("Content-Length", strconv.Itoa(len(a.Data)))
	_, _ = w.Write(a.Data)
}

// validID reports whether s can be an id: 1 to protocol.MaxIDLength
// bytes.
func validID(s string) bool { return s != "" && len(s) <= protocol.MaxIDLength }

// clip shortens an id for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
