package router_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// A handler streams a model's tokens as task.progress events of at least
// 8 bytes each, the last one flushed when the model is done; the ö that
// arrives in two tokens is never split over two events.
func ExampleTask_TextStream() {
	ctx := context.Background()
	r, st := newRouter()
	defer st.Close()
	defer r.Close()

	tokens := []string{"Nordic", " pay", "ments", " grow", " fast", " in", " Malm\xc3", "\xb6", ".", " Yes."}
	r.Register(ctx, router.Card("agent:writer", "skill:write"), func(ctx context.Context, t *router.Task) (*router.Result, error) {
		stream := t.TextStream(8)
		var answer strings.Builder
		for _, tok := range tokens { // a model's stream
			answer.WriteString(tok)
			if err := stream.Write(ctx, tok); err != nil {
				return nil, err
			}
		}
		if err := stream.Flush(ctx); err != nil {
			return nil, err
		}
		return &router.Result{Payload: answer.String()}, nil
	})

	req, _ := r.NewRequest("agent:ui", "", nil)
	req.Requires = []string{"skill:write"}
	h, _ := r.Submit(ctx, req)
	if _, err := h.Wait(ctx); err != nil {
		panic(err)
	}
	for ev, err := range st.Read(ctx, store.Query{TaskID: h.TaskID(), TypePrefix: string(protocol.TypeTaskProgress)}) {
		if err != nil {
			panic(err)
		}
		m, _ := ev.Message()
		p, _ := protocol.DecodePayload[router.TextProgress](m)
		fmt.Printf("%q\n", p.Text)
	}
	// Output:
	// "Nordic pay"
	// "ments grow"
	// " fast in"
	// " Malmö."
	// " Yes."
}
