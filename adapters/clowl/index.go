package clowl

import (
	"context"
	"github.com/clutchprotocol/clutch/adapters/internal/ringmap"
)

// Link is where an earlier message landed in the envelope's task tree.
type Link struct {
	RunID    string
	ThreadID string
	TaskID   string
	// TaskType is the message's body.t, so that Clutch events of a task a
	// CLowl REQ started go out with the REQ's task type.
	TaskType string
}

// Index remembers, by message id, where the messages the adapter has
// translated landed, so that a reply finds the task of the message it
// answers (pid) even when that message was not the request itself (a DLGT
// whose pid is a DONE; an INF answering a QRY; an ACK of a CNCL). An
// Index must be safe for concurrent use.
//
// An Index over the event store, for messages the host appends there:
//
//	type storeIndex struct{ st store.Store }
//	func (s storeIndex) Lookup(ctx context.Context, id string) (clowl.Link, bool) {
//		ev, err := s.st.Get(ctx, id)
//		if err != nil {
//			return clowl.Link{}, false
//		}
//		m, err := ev.Message()
//		if err != nil {
//			return clowl.Link{}, false
//		}
//		t, _ := m.Meta[clowl.MetaTaskType].(string)
//		return clowl.Link{RunID: m.RunID, ThreadID: m.ThreadID, TaskID: m.TaskID, TaskType: t}, true
//	}
//	func (storeIndex) Remember(context.Context, string, clowl.Link) {}
type Index interface {
	// Lookup returns the link of the message with this id.
	Lookup(ctx context.Context, id string) (Link, bool)
	// Remember records the link of a translated message.
	Remember(ctx context.Context, id string, l Link)
}

// DefaultIndexSize is how many messages the default in-memory Index
// remembers.
const DefaultIndexSize = 1 << 16

// NewMemoryIndex returns an in-memory Index that remembers the last n
// messages (DefaultIndexSize when n ≤ 0), forgetting the oldest first.
func NewMemoryIndex(n int) Index {
	if n <= 0 {
		n = DefaultIndexSize
	}
	return memIndex{ringmap.New[Link](n)}
}

type memIndex struct{ m *ringmap.Map[Link] }

func (x memIndex) Lookup(_ context.Context, id string) (Link, bool) { return x.m.Get(id) }

func (x memIndex) Remember(_ context.Context, id string, l Link) { x.m.Put(id, l) }
