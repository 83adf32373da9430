package demo_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/demo"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/storetest"
)

func TestRounds(t *testing.T) {
	ctx := context.Background()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "demo.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	team, err := demo.New()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Open(ctx, st, &registry.Options{Keys: team.Keys()})
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := schema.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := team.Register(ctx, r); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		out, err := team.Round(ctx, r, i)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if want := i != 3; out.OK() != want {
			t.Fatalf("round %d: ok=%v (%v), want %v", i, out.OK(), out.Err, want)
		}
		tree, err := r.Tree(ctx, out.Message.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if len(tree.Roots) != 1 || len(tree.Roots[0].Children) == 0 {
			t.Fatalf("round %d: tree %s", i, tree)
		}
	}
	var types = map[protocol.Type]int{}
	for ev, err := range st.Read(ctx, store.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ev.Message()
		types[m.Type]++
	}
	for _, typ := range []protocol.Type{protocol.TypeChatMessage, protocol.TypeRoutingDecision, protocol.TypeToolCall, protocol.TypeToolResult, protocol.TypeToolError, protocol.TypeTaskProgress, protocol.TypeTaskError} {
		if types[typ] == 0 {
			t.Errorf("no %s event: %v", typ, types)
		}
	}
	storetest.AssertOneTerminal(t, st)
}
