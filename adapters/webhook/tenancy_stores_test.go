package webhook

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

func TestMain(m *testing.M) { os.Exit(backends.Main(m)) }

// tenancyRouter is a router on st for the tenancy tests.
func tenancyRouter(t *testing.T, st store.Store) *router.Router {
	t.Helper()
	reg, err := registry.Open(context.Background(), st, nil)
	require.NoError(t, err)
	r, err := router.New(st, reg, &router.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestHandlerTenancy: a second sender ("agent:eve", submit scope only)
// whose mapping takes run_id / thread_id / task_id from the body cannot
// write into the first sender's run, thread or task, nor into a reserved
// run (webhook deliveries, registry, rules), and is answered as for a
// missing id (docs/protocol.md §6.7).
func TestHandlerTenancy(t *testing.T) {
	eve := auth.Caller{AgentID: "agent:eve", Scopes: []string{auth.ScopeSubmit}}
	m := &Mapping{Type: "x.shop.note", RunID: "/run", ThreadID: "/thread", TaskID: "/task"}
	for _, b := range backends.All() {
		t.Run(b.Name, func(t *testing.T) {
			st := b.New(t)
			r := tenancyRouter(t, st)
			sShop, sEve := newSecret(t), newSecret(t)
			h, err := NewHandler(r, m, map[string]auth.Caller{sShop: submitter, sEve: eve}, nil)
			require.NoError(t, err)
			now := time.Now()

			status, out := serve(t, h, delivery(t, sShop, "msg_shop1", now, `{"run":"run_shop","thread":"thr_shop","task":"task_shop"}`))
			require.Equal(t, http.StatusOK, status, out)

			for name, body := range map[string]string{
				"run":             `{"run":"run_shop","thread":"thr_e1","task":"task_e1"}`,
				"thread":          `{"run":"run_e2","thread":"thr_shop","task":"task_e2"}`,
				"task":            `{"run":"run_e3","thread":"thr_e3","task":"task_shop"}`,
				"webhook run":     `{"run":"run:webhook:orders","thread":"thr_e4","task":"task_e4"}`,
				"registry run":    `{"run":"run_registry","thread":"thr_e5","task":"task_e5"}`,
				"rules run":       `{"run":"run:rules:default","thread":"thr_e6","task":"task_e6"}`,
				"clutch run":      `{"run":"run_clutch_secret","thread":"thr_e7","task":"task_e7"}`,
				"nodes run":       `{"run":"run_clutch_nodes","thread":"thr_e9","task":"task_e9"}`,
				"reserved thread": `{"run":"run_e8","thread":"thread:rules:default","task":"task_e8"}`,
			} {
				status, out := serve(t, h, delivery(t, sEve, "msg_eve_"+strings.ReplaceAll(name, " ", "_"), now, body))
				assert.Equal(t, http.StatusNotFound, status, "%s: %v", name, out)
			}
			// Nothing of eve's landed in shop's run, and no reserved run was
			// created by eve.
			for ev, err := range st.Read(context.Background(), store.Query{AgentID: eve.AgentID}) {
				require.NoError(t, err)
				msg, err := ev.Message()
				require.NoError(t, err)
				t.Errorf("eve stored %s in run %s", msg.Type, msg.RunID)
			}
			// eve's own run works.
			status, out = serve(t, h, delivery(t, sEve, "msg_eve_own", now, `{"run":"run_eve9","thread":"thr_eve9","task":"task_eve9"}`))
			require.Equal(t, http.StatusOK, status, out)
			assert.Equal(t, "run_eve9", out["run_id"])
			// shop's run is still writable by shop.
			status, out = serve(t, h, delivery(t, sShop, "msg_shop2", now, `{"run":"run_shop","thread":"thr_shop","task":"task_shop"}`))
			require.Equal(t, http.StatusOK, status, out)
			assert.False(t, protocol.Reserved(out["run_id"].(string)))
		})
	}
}

// TestHandlerTenancyTaskRequest: a task.request mapped into another
// sender's run (the router path, Router.Admit) is refused as not found and
// starts nothing there (docs/protocol.md §6.7).
func TestHandlerTenancyTaskRequest(t *testing.T) {
	eve := auth.Caller{AgentID: "agent:eve", Scopes: []string{auth.ScopeSubmit}}
	m := &Mapping{Type: protocol.TypeTaskRequest, RunID: "/run", Requires: []string{"skill:echo"}}
	for _, b := range backends.All() {
		t.Run(b.Name, func(t *testing.T) {
			st := b.New(t)
			r := tenancyRouter(t, st)
			sShop, sEve := newSecret(t), newSecret(t)
			h, err := NewHandler(r, m, map[string]auth.Caller{sShop: submitter, sEve: eve}, nil)
			require.NoError(t, err)
			note, err := NewHandler(r, &Mapping{Type: "x.shop.note", RunID: "/run"}, map[string]auth.Caller{sShop: submitter}, nil)
			require.NoError(t, err)
			now := time.Now()
			status, out := serve(t, note, delivery(t, sShop, "msg_shop1", now, `{"run":"run_shop"}`))
			require.Equal(t, http.StatusOK, status, out)
			for _, run := range []string{"run_shop", "run:webhook:orders", "run_registry", "run_clutch_nodes"} {
				status, out = serve(t, h, delivery(t, sEve, "msg_eve_"+strings.ReplaceAll(run, ":", "_"), now, `{"run":"`+run+`"}`))
				assert.Equal(t, http.StatusNotFound, status, "%s: %v", run, out)
			}
			for ev, err := range st.Read(context.Background(), store.Query{AgentID: eve.AgentID}) {
				require.NoError(t, err)
				msg, err := ev.Message()
				require.NoError(t, err)
				t.Errorf("eve stored %s in run %s", msg.Type, msg.RunID)
			}
		})
	}
}
