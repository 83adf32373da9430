package a2a

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// seedTasks appends n ended A2A tasks from "from" the way the Server
// stores them (request, accept, result), in batches.
func seedTasks(tb testing.TB, env *routertest.Env, from string, n int) {
	tb.Helper()
	ids := env.Router.IDs()
	ctx := context.Background()
	var batch []*protocol.Message
	for i := range n {
		req, err := env.Router.NewRequest(from, PayloadContent, Content{Text: "hello"})
		if err != nil {
			tb.Fatal(err)
		}
		req.To = []protocol.Participant{{AgentID: "agent:echo"}}
		req.Meta = map[string]any{metaSource: SourceA2A}
		acc := ids.Reply(req, protocol.TypeTaskAccept, "agent:echo")
		res := ids.Reply(req, protocol.TypeTaskResult, "agent:echo")
		res.PayloadType = PayloadContent
		if err := res.SetPayload(Content{Text: "echo: hello"}); err != nil {
			tb.Fatal(err)
		}
		batch = append(batch, req, acc, res)
		if len(batch) >= 600 || i == n-1 {
			if _, err := env.Store.Append(ctx, batch...); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// BenchmarkListTasks: one ListTasks page (50) over a store of 15k A2A
// tasks, for the caller who owns them all and for a caller who owns 50 of
// them among the 15k. A page sorts and counts every task of its caller
// (A2A 1.0 §3.1.4: newest first, totalSize before paging), so it grows
// with the caller's history. The store is a boltstore file, the store a
// server runs on: memstore, the test double, reads a task by scanning its
// whole log, which a page does twice per task.
func BenchmarkListTasks(b *testing.B) {
	st, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() }) // after the Env's own checks, which read it
	env := routertest.New(b, &routertest.Options{Router: router.Options{MaxAttempts: 1}, Store: st})
	env.Register(card("agent:echo", nil, "skill:echo"), echo)
	srv, err := NewServer(env.Router, testOptions(nil))
	if err != nil {
		b.Fatal(err)
	}
	seedTasks(b, env, "agent:bulk", 15000)
	seedTasks(b, env, "agent:few", 50)
	h := &rpc{s: srv}
	for _, bc := range []struct {
		name, caller string
		scopes       []string
	}{
		{"owner-of-15k", "agent:bulk", nil},
		{"owner-of-50", "agent:few", nil},
		{"read-all", "agent:ops", []string{auth.ScopeReadAll}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := auth.NewContext(context.Background(), &auth.Caller{AgentID: bc.caller, Scopes: bc.scopes})
			b.ReportAllocs()
			for b.Loop() {
				resp, err := h.ListTasks(ctx, &a2a.ListTasksRequest{})
				if err != nil || len(resp.Tasks) != 50 {
					b.Fatalf("%v %d", err, len(resp.Tasks))
				}
			}
		})
	}
}
