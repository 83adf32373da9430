package gateway

import (
	"testing"

	"github.com/clutchprotocol/clutch/store"
)

// GET /v1/store serves the store's usage to read:all callers only: its
// figures cover every caller's events.
func TestStoreUsage(t *testing.T) {
	forStores(t, func(t *testing.T, e *env) {
		e.runTask(keyAlice, `{"q":"alice's"}`)
		status, body := e.do("GET", "/v1/store", keyAlice, "")
		wantError(t, "alice GET /v1/store", status, body, 403, "POLICY_DENIED")
		status, body = e.do("GET", "/v1/store", keyNone, "")
		wantError(t, "no scope GET /v1/store", status, body, 403, "POLICY_DENIED")

		var got wireUsage
		e.getJSON("/v1/store", keyAudit, 200, &got)
		u, err := store.UsageOf(t.Context(), e.st) // after: the registry may append meanwhile
		if err != nil {
			t.Fatal(err)
		}
		if got.Events == 0 || got.Events > u.Events || got.LastSeq > u.LastSeq || got.OldestSeq != 1 ||
			got.OldestTime != formatTime(u.OldestTime) || got.Bytes <= 0 || got.LastCompaction != "" || got.LastBackup != "" {
			t.Fatalf("GET /v1/store: %+v; the store says %+v", got, u)
		}
	})
}
