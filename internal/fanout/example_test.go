package fanout_test

import (
	"context"
	"fmt"

	"github.com/clutchprotocol/clutch/internal/fanout"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// Every stream of a surface follows the store through the surface's one
// Hub, as it would through store.Follow.
func Example() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	defer st.Close()
	hub := fanout.New(st, nil)
	for _, run := range []string{"run_a", "run_b", "run_a"} {
		m := protocol.NewMessage(protocol.TypeChatMessage, "agent:writer")
		m.RunID, m.ThreadID, m.TaskID = run, "thr_"+run, "task_"+run
		if _, err := st.Append(ctx, m); err != nil {
			fmt.Println(err)
			return
		}
	}
	for ev, err := range hub.Follow(ctx, store.Query{RunID: "run_a", Limit: 2}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(ev.Seq)
	}
	// Output:
	// 1
	// 3
}
