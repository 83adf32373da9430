package storetest

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
)

// gen makes valid messages with deterministic ids and timestamps.
type gen struct {
	ids *protocol.IDs
}

var genBase = time.Date(2026, 2, 1, 13, 20, 11, 0, time.UTC)

func newGen(seed uint64) *gen {
	var tick atomic.Int64
	clock := func() time.Time { return genBase.Add(time.Duration(tick.Add(1)) * time.Millisecond) }
	return &gen{ids: protocol.NewIDs(&protocol.IDOptions{
		Clock:   clock,
		Entropy: rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 1}),
	})}
}

// key is where a message belongs.
type key struct {
	run, thread, task, agent string
	typ                      protocol.Type
}

func (g *gen) msg(k key) *protocol.Message {
	if k.typ == "" {
		k.typ = protocol.TypeTaskProgress
	}
	if k.agent == "" {
		k.agent = "agent:worker"
	}
	m := g.ids.NewMessage(k.typ, k.agent)
	if k.run != "" {
		m.RunID = k.run
	}
	if k.thread != "" {
		m.ThreadID = k.thread
	}
	if k.task != "" {
		m.TaskID = k.task
	}
	m.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
	m.Payload = json.RawMessage(`{"note":"` + m.ID + `"}`)
	return m
}

// simple returns n messages of one new run, thread and task.
func (g *gen) simple(n int) []*protocol.Message {
	k := key{run: g.ids.RunID(), thread: g.ids.ThreadID(), task: g.ids.TaskID()}
	out := make([]*protocol.Message, n)
	for i := range out {
		out[i] = g.msg(k)
	}
	return out
}

// workload returns n messages spread over 3 runs, 5 threads, 9 tasks, 4
// agents and several types, interleaved the way concurrent work is.
func (g *gen) workload(n int) []*protocol.Message {
	runs := []string{g.ids.RunID(), g.ids.RunID(), g.ids.RunID()}
	threads := []string{g.ids.ThreadID(), g.ids.ThreadID(), g.ids.ThreadID(), g.ids.ThreadID(), g.ids.ThreadID()}
	var tasks []string
	for range 9 {
		tasks = append(tasks, g.ids.TaskID())
	}
	agents := []string{"agent:a", "agent:b", "agent:c", "agent:router"}
	types := []protocol.Type{
		protocol.TypeTaskRequest, protocol.TypeTaskAccept, protocol.TypeTaskProgress,
		protocol.TypeTaskResult, protocol.TypeChatMessage, protocol.TypeToolCall,
		protocol.TypeRoutingDecision, "x.acme.note",
	}
	r := rand.New(rand.NewPCG(uint64(n), 7))
	out := make([]*protocol.Message, n)
	for i := range out {
		task := r.IntN(len(tasks))
		m := g.msg(key{
			run:    runs[task%len(runs)],
			thread: threads[(task+r.IntN(2))%len(threads)],
			task:   tasks[task],
			agent:  agents[r.IntN(len(agents))],
			typ:    types[r.IntN(len(types))],
		})
		if i%3 == 0 {
			m.IdempotencyKey = "idem-" + strconv.Itoa(i)
		}
		out[i] = m
	}
	return out
}

// mustEncode returns m's bytes, failing the test if it does not encode.
func mustEncode(t testing.TB, m *protocol.Message) []byte {
	t.Helper()
	b, err := protocol.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
