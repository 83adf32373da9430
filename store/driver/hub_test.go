package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// testLog is a plain log under one mutex with the page function and the
// Signal a store gives its hub; pages counts the page calls.
type testLog struct {
	sig   Signal
	mu    sync.Mutex
	evs   []store.Event
	pages atomic.Int64
}

func (l *testLog) append(t *testing.T, run, task string) {
	m := protocol.NewMessage(protocol.TypeChatMessage, "agent:w")
	m.RunID, m.ThreadID, m.TaskID = run, "thr_"+run, task
	m.Payload = json.RawMessage(`{"text":"x"}`)
	raw, err := protocol.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.evs = append(l.evs, store.Event{Seq: uint64(len(l.evs) + 1), Raw: raw})
	l.mu.Unlock()
	l.sig.Notify()
}

func (l *testLog) lastSeq(ctx context.Context) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return uint64(len(l.evs)), nil
}

func (l *testLog) page(ctx context.Context, q store.Query, after, upTo uint64, n int) ([]store.Event, uint64, error) {
	l.pages.Add(1)
	if err := ctx.Err(); err != nil {
		return nil, after, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	end := min(upTo, uint64(len(l.evs)))
	var out []store.Event
	for seq := after + 1; seq <= end; seq++ {
		f := fieldsOf(l.evs[seq-1].Raw)
		if !q.Match(f.run, f.thread, f.task, f.agent, f.typ) {
			continue
		}
		if out = append(out, l.evs[seq-1]); len(out) == n {
			return out, seq, nil
		}
	}
	return out, max(end, after), nil
}

// However many readers follow, each append costs one page read of the
// follower, and each reader gets the events of its own task only.
func TestHubOneFollower(t *testing.T) {
	var l testLog
	h := NewHub(&l.sig, l.page, l.lastSeq)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const readers, appends = 100, 20
	got := make(chan string, readers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			task := fmt.Sprintf("task_%d", i)
			for ev, err := range h.Follow(ctx, store.Query{TaskID: task}) {
				if err != nil {
					got <- err.Error()
					return
				}
				if f := fieldsOf(ev.Raw); f.task != task {
					got <- fmt.Sprintf("%s got an event of %s", task, f.task)
					return
				}
				got <- task
			}
		})
	}
	// Every reader has joined once the follower has handed each its task's
	// first event: append to every task, and take one event from each.
	for i := range readers {
		l.append(t, "run_a", fmt.Sprintf("task_%d", i))
	}
	seen := map[string]bool{}
	for range readers {
		s := <-got
		if !strings.HasPrefix(s, "task_") || seen[s] {
			t.Fatalf("first round: %s (seen %v)", s, seen[s])
		}
		seen[s] = true
	}
	before := l.pages.Load()
	for range appends {
		l.append(t, "run_a", "task_7")
		if s := <-got; s != "task_7" {
			t.Fatal(s)
		}
	}
	if n := l.pages.Load() - before; n != appends {
		t.Fatalf("%d appends with %d readers read %d pages; want one each", appends, readers, n)
	}
	cancel()
	wg.Wait()
	select {
	case s := <-got:
		t.Fatalf("after the end: %s", s)
	default:
	}
}

// fieldsOf reads what the store indexes a message by (its decoded
// fields), names and values spelt with escapes included.
func TestFieldsOf(t *testing.T) {
	m := protocol.NewMessage(protocol.TypeTaskRequest, "agent:a")
	m.RunID, m.ThreadID, m.TaskID = "run_a", "thr_a", "task_a"
	m.Payload = json.RawMessage(`{"from":{"agent_id":"agent:nested"},"run_id":"run_nested"}`)
	plain, err := protocol.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	// The same message with escapes in names and values: the store keeps
	// the bytes a message arrived with.
	esc := strings.NewReplacer(`"type":`, `"\u0074ype":`, `"run_id":"run_a"`, `"r\u0075n_id":"run_\u0061"`,
		`"from":{"agent_id":"agent:a"}`, `"from":{"agent\u005fid":"agent:\u0061"}`, `"task.request"`, `"task.requ\u0065st"`)
	escaped := []byte(esc.Replace(string(plain)))
	if !bytes.Contains(escaped, []byte(`"agent\u005fid":"agent:\u0061"`)) || !bytes.Contains(escaped, []byte(`r\u0075n_id`)) {
		t.Fatalf("no escapes in %s", escaped)
	}
	for _, raw := range [][]byte{
		plain,
		escaped,
		[]byte(`not json`), // not an envelope: matches only the empty query
	} {
		got := fieldsOf(raw)
		var want fields
		if m, err := (store.Event{Raw: raw}).Message(); err == nil {
			want = fields{m.RunID, m.ThreadID, m.TaskID, m.From.AgentID, m.Type}
		} else if raw[0] == '{' {
			t.Fatalf("decode %s: %v", raw, err)
		}
		if got != want {
			t.Errorf("fieldsOf(%s) = %+v, want %+v", raw, got, want)
		}
	}
}
