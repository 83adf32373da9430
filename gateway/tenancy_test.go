package gateway

import (
	"encoding/json"
	"strings"
	"testing"

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
			for _, key := range []string{keyBob} {
				var l struct {
					Runs []wireSummary `json:"runs"`
				}
				e.getJSON("/v1/runs", key, 200, &l)
				for _, s := range l.Runs {
					if s.ID == a.RunID || protocol.Reserved(s.ID) {
						t.Errorf("bob lists %s", s.ID)
					}
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
