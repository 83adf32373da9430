package gateway

import (
	"net/http"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/httpjson"
	"github.com/clutchprotocol/clutch/store"
)

// ---- GET /v1/store

// wireUsage is store.Usage in the API's shapes: times in its format,
// left out when zero (never happened, or not known).
type wireUsage struct {
	Bytes          int64  `json:"bytes"`
	Free           int64  `json:"free_bytes,omitempty"`
	Events         uint64 `json:"events"`
	LastSeq        uint64 `json:"last_seq"`
	OldestSeq      uint64 `json:"oldest_seq,omitempty"`
	OldestTime     string `json:"oldest_time,omitempty"`
	LastCompaction string `json:"last_compaction,omitempty"`
	LastBackup     string `json:"last_backup,omitempty"`
}

// serveStore answers what the store holds (store.UsageOf): figures about
// every caller's events, so read:all only.
func (g *Gateway) serveStore(w http.ResponseWriter, r *http.Request) {
	if !caller(r.Context()).Has(auth.ScopeReadAll) {
		g.writeError(w, r, auth.ErrForbidden)
		return
	}
	u, err := store.UsageOf(r.Context(), g.st)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	out := wireUsage{Bytes: u.Bytes, Free: u.Free, Events: u.Events, LastSeq: u.LastSeq, OldestSeq: u.OldestSeq}
	if !u.OldestTime.IsZero() {
		out.OldestTime = formatTime(u.OldestTime)
	}
	if !u.LastCompaction.IsZero() {
		out.LastCompaction = formatTime(u.LastCompaction)
	}
	if !u.LastBackup.IsZero() {
		out.LastBackup = formatTime(u.LastBackup)
	}
	httpjson.Write(w, http.StatusOK, out)
}
