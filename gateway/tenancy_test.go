package gateway

import (
	"encoding/json"
	"github.com/clutchprotocol/clutch/auth"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store"
)

// TestTenancy: bob, with only the submit scope, attacks alice's runs on
// every store (docs/protocol.md §6.7). Nothing of alice's is read, nothing
// is written into her runs, her requests run once, and her own runs stay
// hers; each refusal is the 404 of an id that does not exist.
func TestTenancy(t *testing.T) {
	for _, b := range backends.All() {
		t.Run(b.Name, func(t *testing.T) {
			e := newEnv(t, &envOptions{store: b.New})
			// bob pre-creates a run and a thread whose ids alice uses later.
			e.submit(keyBob, `{"type":"chat.message","run_id":"run_planned","thread_id":"thr_planned","task_id":"task_planned","payload":{"text":"squat"}}`)
			for _, body := range []string{
				`{"type":"task.request","run_id":"run_planned","requires":["skill:echo"],"payload":{}}`,
				`{"type":"task.request","thread_id":"thr_planned","requires":["skill:echo"],"payload":{}}`,
				`{"type":"task.request","task_id":"task_planned","requires":["skill:echo"],"payload":{}}`,
			} {
				status, out := e.do("POST", "/v1/messages", keyAlice, body)
				wantError(t, "alice into bob's ids: "+body, status, out, 404, "NOT_FOUND")
			}

			a := e.runTask(keyAlice, `{"secret":"alice's"}`)
			// Alice's request and the same Idempotency-Key from bob: two runs.
			ka := e.submit(keyAlice, `{"type":"task.request","idempotency_key":"k1","requires":["skill:echo"],"payload":{}}`)
			kb := e.submit(keyBob, `{"type":"task.request","idempotency_key":"k1","requires":["skill:echo"],"payload":{}}`)
			if ka.RunID == kb.RunID || kb.Duplicate || ka.Duplicate {
				t.Fatalf("one key, two callers: %+v %+v", ka, kb)
			}
			e.waitEnded(ka.TaskID)
			e.waitEnded(kb.TaskID)

			attacks := []struct{ name, method, path, body string }{
				{"read her run", "GET", "/v1/runs/" + a.RunID + "/events", ""},
				{"read her thread", "GET", "/v1/threads/" + a.ThreadID + "/events", ""},
				{"read her task", "GET", "/v1/tasks/" + a.TaskID + "/events", ""},
				{"stream her run", "GET", "/v1/stream?run=" + a.RunID, ""},
				{"post into her run", "POST", "/v1/messages", `{"type":"chat.message","run_id":"` + a.RunID + `","payload":{"text":"x"}}`},
				{"post into her thread", "POST", "/v1/messages", `{"type":"chat.message","thread_id":"` + a.ThreadID + `","payload":{"text":"x"}}`},
				{"chat naming her task", "POST", "/v1/messages", `{"type":"chat.message","task_id":"` + a.TaskID + `","payload":{"text":"x"}}`},
				{"request under her task", "POST", "/v1/messages", `{"type":"task.request","parent_task_id":"` + a.TaskID + `","requires":["skill:echo"],"payload":{}}`},
				{"request into her run", "POST", "/v1/messages", `{"type":"task.request","run_id":"` + a.RunID + `","requires":["skill:echo"],"payload":{}}`},
				{"cancel her task", "POST", "/v1/messages", `{"type":"task.cancel","task_id":"` + a.TaskID + `","payload":{}}`},
				{"squat the registry run", "POST", "/v1/messages", `{"type":"chat.message","run_id":"` + registry.DefaultRunID + `","payload":{"text":"x"}}`},
				{"squat a reserved run", "POST", "/v1/messages", `{"type":"chat.message","run_id":"run_clutch_nodes","payload":{"text":"x"}}`},
				{"squat the webhook deliveries", "POST", "/v1/messages", `{"type":"chat.message","run_id":"run:webhook:ops","payload":{"text":"x"}}`},
				{"read the registry", "GET", "/v1/runs/" + registry.DefaultRunID + "/events", ""},
			}
			for _, at := range attacks {
				status, out := e.do(at.method, at.path, keyBob, at.body)
				wantError(t, at.name, status, out, 404, "NOT_FOUND")
			}

			// Nothing of bob's is in alice's run, and it ran once.
			requests := 0
			for ev, err := range e.st.Read(t.Context(), store.Query{RunID: a.RunID}) {
				if err != nil {
					t.Fatal(err)
				}
				m, _ := ev.Message()
				if m.From.AgentID == "agent:bob" {
					t.Errorf("bob's %s is in alice's run", m.Type)
				}
				if m.Type == protocol.TypeTaskRequest {
					requests++
				}
			}
			if requests != 1 {
				t.Errorf("alice's run has %d requests", requests)
			}
			var l struct {
				Runs []wireSummary `json:"runs"`
			}
			e.getJSON("/v1/runs", keyBob, 200, &l)
			for _, s := range l.Runs {
				if s.ID == a.RunID || protocol.Reserved(s.ID) {
					t.Errorf("bob lists %s", s.ID)
				}
			}
			// Alice still reads her own run, and streams of bob carry
			// nothing of hers.
			e.getJSON("/v1/runs/"+a.RunID+"/events", keyAlice, 200, nil)
			var page struct {
				Events []json.RawMessage `json:"events"`
			}
			e.getJSON("/v1/runs/"+kb.RunID+"/events", keyBob, 200, &page)
			for _, ev := range page.Events {
				if strings.Contains(string(ev), "alice") {
					t.Errorf("bob's run shows %s", ev)
				}
			}
		})
	}
}

// TestOneCallerCannotStarve: bob holds as many streams as he may, never
// reading them, while big events pour in; alice's requests still all
// succeed, bob's extra streams are refused with 503 rather than taking
// everybody's capacity, and the server's heap grows by less than the
// stated bound (his streams' byte buffers, cut as slow consumers).
func TestOneCallerCannotStarve(t *testing.T) {
	const inFlight = 16 // a quarter, 4, per caller
	e := newEnv(t, &envOptions{gw: &Options{Limits: &auth.Options{MaxInFlight: inFlight}, StreamBufferBytes: 1 << 20, SlowTimeout: time.Hour}})
	first := e.submit(keyAlice, `{"type":"chat.message","payload":{"text":"start"}}`)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	var held []*http.Response
	refused := 0
	for range inFlight {
		resp := e.resp("GET", "/v1/stream", keyBob, "", nil)
		if resp.StatusCode == http.StatusServiceUnavailable {
			refused++
			resp.Body.Close()
			continue
		}
		if resp.StatusCode != 200 {
			t.Fatalf("bob's stream: %d", resp.StatusCode)
		}
		held = append(held, resp)
	}
	if len(held) != inFlight/4 || refused != inFlight-inFlight/4 {
		t.Fatalf("bob holds %d streams, %d refused", len(held), refused)
	}
	big := `{"text":"` + strings.Repeat("x", 64<<10) + `"}`
	for range 200 { // 12.8 MiB that bob's streams do not read
		m := e.r.IDs().NewMessage(protocol.TypeChatMessage, "agent:bob")
		m.Payload = json.RawMessage(big)
		if _, err := e.st.Append(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		status, body := e.do("POST", "/v1/messages", keyAlice, `{"type":"chat.message","run_id":"`+first.RunID+`","payload":{"text":"still here"}}`)
		if status != http.StatusAccepted {
			t.Fatalf("alice's request %d: %d %s", i, status, body)
		}
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	const bound = 64 << 20
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > bound {
		t.Errorf("the heap grew by %d MiB, over %d MiB", grew>>20, bound>>20)
	}
	for _, r := range held {
		r.Body.Close()
	}
}
