package agui_test

import (
	"context"
	"iter"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/gateway/agui"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// breakingStore's Follow fails after yielding `after` events.
type breakingStore struct {
	store.Store
	after int
}

func (s *breakingStore) Follow(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return func(yield func(store.Event, error) bool) {
		n := 0
		for ev, err := range s.Store.Follow(ctx, q) {
			if n == s.after {
				yield(store.Event{}, store.ErrClosed)
				return
			}
			if !yield(ev, err) || err != nil {
				return
			}
			n++
		}
	}
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
