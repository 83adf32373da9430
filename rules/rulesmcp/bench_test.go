package rulesmcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/rules"
	"github.com/clutchprotocol/clutch/store/memstore"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchRule is a rule of about 2 KiB with five sections of four items.
func benchRule(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Rule %d\n\n", i)
	for s := range 5 {
		fmt.Fprintf(&b, "## Section %d\n\nWhy this section matters for rule %d.\n\n", s, i)
		for it := range 4 {
			fmt.Fprintf(&b, "%d. Do step %d of section %d carefully, and say so.\n", it+1, it+1, s)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// benchSession is a go-sdk client session (in-memory transport) to a
// server whose library holds n more rules, and their ids and hashes.
func benchSession(b *testing.B, n int) (*sdk.ClientSession, []string, map[string]string) {
	ctx := context.Background()
	st, err := memstore.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	h, err := newHost(ctx, st, quiet)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, n)
	hashes := map[string]string{}
	for i := range n {
		d, err := h.lib.Publish(ctx, "agent:lead", rules.Publish{Path: fmt.Sprintf("rules/B%02d.md", i), Content: benchRule(i)})
		if err != nil {
			b.Fatal(err)
		}
		ids[i], hashes[d.ID] = d.ID, d.Hash
	}
	sst, ct := sdk.NewInMemoryTransports()
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = h.srv.Run(sctx, sst)
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
		h.router.Close()
		st.Close()
	})
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "memsetup", Arguments: map[string]any{"session_id": "bench", "knownHashes": map[string]any{"META_PROMPT.md": ""}}}); err != nil {
		b.Fatal(err)
	}
	return cs, ids, hashes
}

func benchCall(b *testing.B, cs *sdk.ClientSession, name string, args any) {
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		b.Fatal(name, err, res)
	}
}

// BenchmarkMemload50 is the memload tool over MCP (go-sdk client, in-memory
// transport) for 50 rules, all hashes known (delta) and none known.
func BenchmarkMemload50(b *testing.B) {
	cs, ids, hashes := benchSession(b, 50)
	unknown := map[string]string{}
	for _, id := range ids {
		unknown[id] = ""
	}
	for _, tc := range []struct {
		name  string
		known map[string]string
	}{{"known", hashes}, {"unknown", unknown}} {
		b.Run(tc.name, func(b *testing.B) {
			args := map[string]any{"ids": ids, "knownHashes": tc.known}
			b.ReportAllocs()
			for b.Loop() {
				benchCall(b, cs, "memload", args)
			}
		})
	}
}

// BenchmarkMemref10 is the memref tool over MCP with 10 references.
func BenchmarkMemref10(b *testing.B) {
	cs, ids, _ := benchSession(b, 10)
	refs := make([]any, 10)
	for i := range refs {
		refs[i] = map[string]any{"ruleId": ids[i], "constraintId": fmt.Sprintf("Section %d/%d", i%5, i%4+1), "reason": "applied"}
	}
	args := map[string]any{"refs": refs}
	b.ReportAllocs()
	for b.Loop() {
		benchCall(b, cs, "memref", args)
	}
}
