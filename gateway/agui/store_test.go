package agui_test

import (
	"context"
	"iter"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/gateway/agui"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// breakingStore fails the reads of a stream when they reach the event
// after the first `after` events of a run: Follow (which streams go
// through, one follower shared by all) and Read of a whole run (the
// backlog of a stream that joins it).
type breakingStore struct {
	store.Store
	after int
}

func (s *breakingStore) Follow(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return s.breaking(ctx, s.Store.Follow(ctx, q))
}

func (s *breakingStore) Read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	if q.RunID == "" || q.TypePrefix != "" {
		return s.Store.Read(ctx, q)
	}
	return s.breaking(ctx, s.Store.Read(ctx, q))
}

func (s *breakingStore) breaking(ctx context.Context, evs iter.Seq2[store.Event, error]) iter.Seq2[store.Event, error] {
	return func(yield func(store.Event, error) bool) {
		for ev, err := range evs {
			if err == nil && s.rank(ctx, ev) > s.after {
				yield(store.Event{}, store.ErrClosed)
				return
			}
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// rank is the place of ev among the events of its run (1 for the first),
// 0 for the system's own runs.
func (s *breakingStore) rank(ctx context.Context, ev store.Event) int {
	m, err := ev.Message()
	if err != nil || protocol.Reserved(m.RunID) {
		return 0
	}
	n := 0
	for e, err := range s.Store.Read(ctx, store.Query{RunID: m.RunID}) {
		if err != nil || e.Seq > ev.Seq {
			break
		}
		n++
	}
	return n
}

// TestStoreFails: a store that fails under a stream ends it with RUN_ERROR
// (after RUN_STARTED when nothing was sent yet), never with a half stream.
func TestStoreFails(t *testing.T) {
	for after, want := range map[int]string{
		0: "RUN_STARTED RUN_ERROR",
		3: "RUN_STARTED CUSTOM STEP_STARTED RUN_ERROR",
	} {
		ctx := t.Context()
		mem, _ := memstore.New(nil)
		st := &breakingStore{Store: mem, after: after}
		reg, err := registry.Open(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		schemas, _ := schema.New(nil)
		r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Register(ctx, card("agent:worker", "skill:work"), worker); err != nil {
			t.Fatal(err)
		}
		h, err := agui.New(r, &agui.Options{Agent: "agent:worker", Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(auth.Middleware(testAuth, nil)(h))
		e := &testEnv{h: h, hs: hs}
		resp := e.do(t, "POST", "/", testKey, input("t", "r", "x"))
		frames := readSSE(t, resp.Body)
		resp.Body.Close()
		var types []string
		for _, f := range frames {
			types = append(types, f.Event["type"].(string))
		}
		if got := strings.Join(types, " "); got != want {
			t.Errorf("after %d: %s, want %s", after, got, want)
		}
		if last := frames[len(frames)-1].Event; last["code"] != "INTERNAL" {
			t.Errorf("after %d: %v", after, last)
		}
		hs.Close()
		r.Close()
		mem.Close()
	}
}
