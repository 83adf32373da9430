package ui

// A stand-in for package gateway while it is being written: only what the
// page calls, over a real memstore. Replaced by the real gateway.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

type wireEvent struct {
	Seq     uint64          `json:"seq"`
	Time    time.Time       `json:"time"`
	Message json.RawMessage `json:"message"`
}

func fakeGateway(st store.Store, key string) http.Handler {
	mux := http.NewServeMux()
	events := func(w http.ResponseWriter, r *http.Request, q store.Query) {
		q.AfterSeq, _ = strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
		q.Limit, _ = strconv.Atoi(r.URL.Query().Get("limit"))
		if q.Limit <= 0 || q.Limit > 5000 {
			q.Limit = 500
		}
		out := []wireEvent{}
		for ev, err := range st.Read(r.Context(), q) {
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			out = append(out, wireEvent{ev.Seq, ev.Time, ev.Raw})
		}
		next := uint64(0)
		if len(out) == q.Limit {
			next = out[len(out)-1].Seq
		}
		writeJSON(w, map[string]any{"events": out, "next_after": next})
	}
	mux.HandleFunc("GET /v1/threads/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		events(w, r, store.Query{ThreadID: r.PathValue("id")})
	})
	mux.HandleFunc("GET /v1/tasks/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		events(w, r, store.Query{TaskID: r.PathValue("id")})
	})
	mux.HandleFunc("GET /v1/threads", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"threads": []any{}, "next_before": 0})
	})
	mux.HandleFunc("GET /v1/agents", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"agents": []any{}})
	})
	mux.HandleFunc("GET /v1/runs/{id}/tree", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"run_id": r.PathValue("id"), "tasks": []any{}})
	})
	mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Type     string          `json:"type"`
			ThreadID string          `json:"thread_id"`
			RunID    string          `json:"run_id"`
			Payload  json.RawMessage `json:"payload"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		m := protocol.NewMessage(protocol.Type(in.Type), "agent:tester")
		if in.ThreadID != "" {
			m.ThreadID = in.ThreadID
		}
		if in.RunID != "" {
			m.RunID = in.RunID
		}
		m.Payload = in.Payload
		res, err := st.Append(r.Context(), m)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.WriteHeader(202)
		writeJSON(w, map[string]any{"id": m.ID, "seq": res[0].Seq, "thread_id": m.ThreadID})
	})
	mux.HandleFunc("GET /v1/stream", func(w http.ResponseWriter, r *http.Request) {
		q := store.Query{ThreadID: r.URL.Query().Get("thread"), TaskID: r.URL.Query().Get("task")}
		q.AfterSeq, _ = strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		for ev, err := range st.Follow(r.Context(), q) {
			if err != nil {
				return
			}
			m, _ := ev.Message()
			b, _ := json.Marshal(wireEvent{ev.Seq, ev.Time, ev.Raw})
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, m.Type, b)
			w.(http.Flusher).Flush()
		}
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") != key {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			_, _ = w.Write([]byte(`{"error":{"code":"UNAUTHORIZED","message":"no key"}}`))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
