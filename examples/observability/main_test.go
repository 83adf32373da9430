package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestObservability(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, config{listen: "127.0.0.1:0", tasks: 2}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		`"Name": "invoke_agent Ken"`,        // a span per task attempt (stdout exporter)
		`"Name": "execute_tool search"`,     // a child span per tool call
		`"Name": "clutch.routing.decision"`, // the routing decision as a span event
		`"Key": "gen_ai.operation.name"`,    // GenAI semantic conventions
		`msg="task accepted"`,               // slog lifecycle records
		`clutch_task_finished_total{clutch_outcome="result",gen_ai_agent_id="agent:ken"} 2`, // Prometheus scrape
		`clutch_tool_duration_seconds_count{clutch_outcome="result",clutch_tool_server="mcp:browser",gen_ai_tool_name="search"} 2`,
		`"Name": "clutch.task.duration"`, // the stdout metric exporter's last export
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %s", want)
		}
	}
	if !strings.Contains(text, "trace_id=") {
		t.Errorf("log records carry no trace ids")
	}
	if t.Failed() {
		t.Logf("output:\n%s", text)
	}
}

// TestOTLP: with OTEL_EXPORTER_OTLP_ENDPOINT set, traces and metrics go to
// that endpoint over OTLP/HTTP (here a receiver started by the test).
func TestOTLP(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.Header.Get("Content-Type") == "application/x-protobuf" && len(b) > 0 {
			got[r.URL.Path]++
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer recv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	var out bytes.Buffer
	if err := run(context.Background(), &out, config{listen: "127.0.0.1:0", tasks: 1, otlp: true}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if got["/v1/traces"] == 0 || got["/v1/metrics"] == 0 {
		t.Errorf("the OTLP receiver got %v, want /v1/traces and /v1/metrics", got)
	}
	if strings.Contains(out.String(), `"Name": "invoke_agent`) {
		t.Errorf("spans were printed as well as exported")
	}
}
