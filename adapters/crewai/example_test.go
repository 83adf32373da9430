package crewai_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/clutchprotocol/clutch/adapters/crewai"
	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// A tracing batch of a one-task crew, as crewAI's tracing client posts it
// (the host adds the trace id of the URL): one run, the crew's root task
// and the crewAI task under it.
func ExampleAdapter_Inbound() {
	raw := []byte(`{"trace_id": "9e29cf0f", "events": [
	  {"event_id": "e1", "timestamp": "2025-10-08T18:18:11.363478+00:00", "type": "crew_kickoff_started",
	   "event_data": {"crew_name": "crew", "inputs": {"topic": "dates"}}},
	  {"event_id": "e2", "timestamp": "2025-10-08T18:18:11.365096+00:00", "type": "task_started",
	   "event_data": {"task_name": "What is the date today?", "agent_role": "Reporter", "task_id": "db8b8b82"}},
	  {"event_id": "e3", "timestamp": "2025-10-08T18:18:11.368580+00:00", "type": "llm_call_completed",
	   "event_data": {"task_id": "db8b8b82", "agent_role": "Reporter", "model": "gpt-4o-mini", "response": "2025-05-21"}},
	  {"event_id": "e4", "timestamp": "2025-10-08T18:18:11.368766+00:00", "type": "task_completed",
	   "event_data": {"task_id": "db8b8b82", "output_raw": "2025-05-21", "agent_role": "Reporter"}},
	  {"event_id": "e5", "timestamp": "2025-10-08T18:18:11.370072+00:00", "type": "crew_kickoff_completed",
	   "event_data": {"crew_name": "crew", "output": {"raw": "2025-05-21"}, "total_tokens": 207}}]}`)
	msgs, err := crewai.New(nil).Inbound(context.Background(), raw)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range msgs {
		fmt.Println(m.Type, m.RunID, m.TaskID, m.From.AgentID, string(m.Payload))
	}
	// Output:
	// task.request run:9e29cf0f task:9e29cf0f agent:crewai:crew:crew {"topic":"dates"}
	// task.request run:9e29cf0f task:db8b8b82 agent:crewai:crew:crew {"name":"What is the date today?"}
	// x.crewai.llm_call run:9e29cf0f task:db8b8b82 agent:crewai:reporter {"model":"gpt-4o-mini","response":"2025-05-21"}
	// task.result run:9e29cf0f task:db8b8b82 agent:crewai:reporter "2025-05-21"
	// task.result run:9e29cf0f task:9e29cf0f agent:crewai:crew:crew "2025-05-21"
}

// A deployed crew as a Clutch agent. The crew here is a stand-in that
// answers like AMP: a kickoff id, then a completed status.
func ExampleRegister() {
	amp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/kickoff":
			fmt.Fprint(w, `{"kickoff_id": "abcd1234"}`)
		case "/status/abcd1234":
			fmt.Fprint(w, `{"status": "completed", "result": {"output": "7-day itinerary", "tasks": []}, "execution_time": 108.5}`)
		}
	}))
	defer amp.Close()

	ctx := context.Background()
	st, _ := memstore.New(nil)
	reg, _ := registry.Open(ctx, st, nil)
	schemas, _ := schema.New(nil)
	r, _ := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	defer r.Close()
	loopback, _ := egress.New(&egress.Options{Allow: []string{"127.0.0.1"}}) // the stand-in is local
	crew, err := crewai.Register(ctx, r, amp.URL, &crewai.CrewOptions{
		AgentID: "agent:travel-crew", BearerToken: "token", Egress: loopback, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer crew.Close()

	req, _ := r.NewRequest("agent:ken", "", map[string]any{"budget": "1000 USD", "duration": "7 days"})
	req.To = []protocol.Participant{{AgentID: "agent:travel-crew"}}
	h, err := r.Submit(ctx, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := h.Wait(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Type, string(out.Message.Payload))
	// Output:
	// task.result "7-day itinerary"
}
