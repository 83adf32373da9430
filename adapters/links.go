package adapters

import (
	"context"
	"strings"
	"sync"

	"github.com/clutchprotocol/clutch/protocol"
)

// Link is where a translated message landed in Clutch: the run, thread
// and task it joined, and Kind, the outside protocol's name for the work
// of its task (a CLowl body.t, a multiagent-1.0 intent).
type Link struct {
	RunID    string
	ThreadID string
	TaskID   string
	Kind     string
}

// Index remembers, by outside message id, where the messages a translator
// translated landed. An Index must be safe for concurrent use.
//
// An Index over the event store, for messages the host appends there
// (kindKey is the meta key the translator keeps the Kind in):
//
//	type storeIndex struct{ st store.Store }
//	func (s storeIndex) Lookup(ctx context.Context, id string) (adapters.Link, bool) {
//		ev, err := s.st.Get(ctx, id)
//		if err != nil {
//			return adapters.Link{}, false
//		}
//		m, err := ev.Message()
//		if err != nil {
//			return adapters.Link{}, false
//		}
//		k, _ := m.Meta[kindKey].(string)
//		return adapters.Link{RunID: m.RunID, ThreadID: m.ThreadID, TaskID: m.TaskID, Kind: k}, true
//	}
//	func (storeIndex) Remember(context.Context, string, adapters.Link) {}
type Index interface {
	// Lookup returns the link of the message with this id.
	Lookup(ctx context.Context, id string) (Link, bool)
	// Remember records the link of a translated message.
	Remember(ctx context.Context, id string, l Link)
}

// DefaultIndexSize is how many messages the in-memory Index of NewLinks
// remembers.
const DefaultIndexSize = 1 << 16

// NewMemoryIndex returns an in-memory Index that remembers the last n
// messages (DefaultIndexSize when n ≤ 0), forgetting the oldest first.
func NewMemoryIndex(n int) Index {
	if n <= 0 {
		n = DefaultIndexSize
	}
	return &memIndex{m: make(map[string]Link), ring: make([]string, n)}
}

// memIndex is a map that forgets its oldest key first.
type memIndex struct {
	mu   sync.Mutex
	m    map[string]Link
	ring []string // keys in insertion order, for eviction
	next int
}

func (x *memIndex) Lookup(_ context.Context, id string) (Link, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	l, ok := x.m[id]
	return l, ok
}

func (x *memIndex) Remember(_ context.Context, id string, l Link) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.m[id]; !ok {
		if old := x.ring[x.next]; old != "" {
			delete(x.m, old)
		}
		x.ring[x.next] = id
		x.next = (x.next + 1) % len(x.ring)
	}
	x.m[id] = l
}

// Links links the ids of an outside protocol's messages to the Clutch
// run, thread and task they landed in, over an Index. A translator
// remembers each message it translates inbound, places a reply in the task
// of the message it answers (TaskOf), and names a task's events outbound
// the way the request that started it did (KindOf).
//
// A request with outside id X starts the Clutch task "task:X"
// (protocol.PrefixTask + X), so a reply to X lands in that task even when
// the Index does not know X. Links is safe for concurrent use.
type Links struct{ idx Index }

// NewLinks returns Links over idx; nil means NewMemoryIndex(0).
func NewLinks(idx Index) *Links {
	if idx == nil {
		idx = NewMemoryIndex(0)
	}
	return &Links{idx: idx}
}

// Lookup returns the link of the message with outside id id.
func (l *Links) Lookup(ctx context.Context, id string) (Link, bool) {
	return l.idx.Lookup(ctx, id)
}

// Remember records where m, translated from the message with the outside
// id m.ID, landed, with the Kind of its work.
func (l *Links) Remember(ctx context.Context, m *protocol.Message, kind string) {
	l.idx.Remember(ctx, m.ID, Link{RunID: m.RunID, ThreadID: m.ThreadID, TaskID: m.TaskID, Kind: kind})
}

// TaskOf returns the task of the message with outside id id: the Index's
// answer, else "task:<id>", the task a request with that id starts.
func (l *Links) TaskOf(ctx context.Context, id string) string {
	if k, ok := l.idx.Lookup(ctx, id); ok && k.TaskID != "" {
		return k.TaskID
	}
	return protocol.PrefixTask + id
}

// KindOf returns the Kind of the outside request that started taskID
// ("task:<id>"), "" when taskID was not started that way or is unknown.
func (l *Links) KindOf(ctx context.Context, taskID string) string {
	id, ok := strings.CutPrefix(taskID, protocol.PrefixTask)
	if !ok || id == "" {
		return ""
	}
	k, _ := l.idx.Lookup(ctx, id)
	return k.Kind
}

// registeredKey prefixes the Index key that records an agent's first
// introduction (a CLowl CAPS, a multiagent-1.0 handshake).
const registeredKey = "registered:"

// Registered reports whether agentID has introduced itself before, in a
// message other than the one that started taskID: a translator then maps
// a repeated introduction to agent.update or agent.heartbeat instead of
// agent.register. A re-sent introduction (same task) is not "before".
func (l *Links) Registered(ctx context.Context, agentID, taskID string) bool {
	k, ok := l.idx.Lookup(ctx, registeredKey+agentID)
	return ok && k.TaskID != taskID
}

// Register records that agentID introduced itself in the message that
// started taskID, unless it had already.
func (l *Links) Register(ctx context.Context, agentID, taskID string) {
	if _, ok := l.idx.Lookup(ctx, registeredKey+agentID); !ok {
		l.idx.Remember(ctx, registeredKey+agentID, Link{TaskID: taskID})
	}
}
