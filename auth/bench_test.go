package auth_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/protocol"
)

// BenchmarkCheckWrite: the ownership check a surface makes before each
// write, on each store: "new" for a message whose new run, thread and
// task the surface made (three index seeks that find nothing), "own" for
// one added to the caller's own run of 1,000 events (three seeks that
// find the first event), and "claim" for a message whose new run id the
// client named (two seeks, a point look-up and the append of the claim).
func BenchmarkCheckWrite(b *testing.B) {
	for _, be := range backends.All() {
		st := be.New(b)
		ctx := context.Background()
		var batch []*protocol.Message
		for i := range 1000 {
			m := protocol.NewMessage(protocol.TypeChatMessage, ken.AgentID)
			m.RunID, m.ThreadID, m.TaskID = "run_ken", "thr_ken", fmt.Sprintf("task_ken%d", i%10)
			batch = append(batch, m)
		}
		if _, err := st.Append(ctx, batch...); err != nil {
			b.Fatal(err)
		}
		ids := protocol.NewIDs(nil)
		b.Run(be.Name+"/new", func(b *testing.B) {
			m := protocol.NewMessage(protocol.TypeTaskRequest, ken.AgentID)
			m.RunID, m.ThreadID, m.TaskID = ids.RunID(), ids.ThreadID(), ids.TaskID()
			for b.Loop() {
				if err := auth.CheckWrite(ctx, st, ken, m, auth.KindRun, auth.KindThread, auth.KindTask); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(be.Name+"/claim", func(b *testing.B) {
			m := protocol.NewMessage(protocol.TypeTaskRequest, ken.AgentID)
			m.ThreadID, m.TaskID = ids.ThreadID(), ids.TaskID()
			i := 0
			for b.Loop() {
				i++
				m.RunID = fmt.Sprintf("run_named%d", i)
				if err := auth.CheckWrite(ctx, st, ken, m, auth.KindThread, auth.KindTask); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(be.Name+"/own", func(b *testing.B) {
			m := protocol.NewMessage(protocol.TypeChatMessage, ken.AgentID)
			m.RunID, m.ThreadID, m.TaskID = "run_ken", "thr_ken", "task_ken3"
			for b.Loop() {
				if err := auth.CheckWrite(ctx, st, ken, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
