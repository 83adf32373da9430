package router_test

import (
	"context"
	"fmt"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
)

// A handler calls a tool through CallTool: the tool.call and its
// tool.result (or tool.error) are stored with one call id.
func ExampleCallTool() {
	ctx := context.Background()
	r, st := newRouter()
	defer st.Close()
	defer r.Close()

	search := func(ctx context.Context, q string) ([]string, error) {
		return []string{"https://example.com/" + q}, nil // a stand-in for a real tool
	}
	ken := router.Card("agent:ken", "skill:research")
	r.Register(ctx, ken, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		q, err := router.Input[schema.ResearchQuery](t)
		if err != nil {
			return nil, err
		}
		hits, err := router.CallTool(ctx, t, "mcp:browser", "search", map[string]string{"query": q.Query},
			func(ctx context.Context) ([]string, error) { return search(ctx, "nordic-payments") })
		if err != nil {
			return nil, err // the tool.error is stored already
		}
		return &router.Result{PayloadType: "research.summary.v1", Payload: schema.ResearchSummary{
			Findings: []string{"found a source"}, Citations: hits,
		}}, nil
	})

	req, _ := r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "Nordic payments"})
	req.Requires = []string{"skill:research"}
	h, _ := r.Submit(ctx, req)
	if _, err := h.Wait(ctx); err != nil {
		panic(err)
	}
	var callID string
	for ev, err := range st.Read(ctx, store.Query{TaskID: h.TaskID(), TypePrefix: "tool."}) {
		if err != nil {
			panic(err)
		}
		m, _ := ev.Message()
		id, _ := protocol.ToolCallID(m)
		switch m.Type {
		case protocol.TypeToolCall:
			callID = id
			fmt.Println("tool.call, call id = its own event id:", id == m.ID)
		case protocol.TypeToolResult:
			res, _ := protocol.DecodePayload[struct {
				CallID  string   `json:"call_id"`
				Tool    string   `json:"tool"`
				Name    string   `json:"name"`
				Content []string `json:"content"`
			}](m)
			fmt.Println("tool.result of that call:", id == callID, res.Tool, res.Name, res.Content)
		}
	}
	// Output:
	// tool.call, call id = its own event id: true
	// tool.result of that call: true mcp:browser search [https://example.com/nordic-payments]
}
