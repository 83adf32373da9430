package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestObservability: by default the output is a short summary a person
// reads: each task's spans and log records and the clutch metrics, no
// exporter JSON, and no port is opened.
func TestObservability(t *testing.T) {
	// The default port taken: without -serve it must not matter.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var out bytes.Buffer
	if err := run(context.Background(), &out, config{listen: ln.Addr().String(), tasks: 2}); err != nil {
		t.Fatalf("with its port taken and no -serve: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"2 research tasks, traced, measured and logged with OpenTelemetry:",
		"task 1: task.result by agent:ken",
		"  span invoke_agent Ken, ",                 // a span per task attempt
		"; events: clutch.routing.decision",         // the routing decision as a span event
		"    span execute_tool search, ",            // a child span per tool call
		"  logs: task accepted, task finished",      // slog records carrying the task's trace id
		"clutch metrics, as Prometheus reads them:", // the Prometheus exposition
		`  clutch_task_finished_total{clutch_outcome="result",gen_ai_agent_id="agent:ken"} 2`,
		`  clutch_tool_duration_seconds_count{clutch_outcome="result",clutch_tool_server="mcp:browser",gen_ai_tool_name="search"} 2`,
		"-export prints the spans, metrics and logs",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, unwanted := range []string{`"Name":`, "_bucket{", "level=DEBUG", "serving http://"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("the default output shows %q", unwanted)
		}
	}
	if n := strings.Count(text, "\n"); n > 60 {
		t.Errorf("the default output is %d lines, want a short summary", n)
	}
	if t.Failed() {
		t.Logf("output:\n%s", text)
	}
}

// TestExport: -export adds what the stdout exporters write (spans,
// metrics, the slog records with their trace ids), and the summary still
// comes last.
func TestExport(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, config{listen: "127.0.0.1:0", tasks: 2, export: true}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		`"Name": "invoke_agent Ken"`,        // the stdout span exporter
		`"Name": "execute_tool search"`,     // a child span per tool call
		`"Name": "clutch.routing.decision"`, // the routing decision as a span event
		`"Key": "gen_ai.operation.name"`,    // GenAI semantic conventions
		`msg="task accepted"`,               // slog lifecycle records
		`"Name": "clutch.task.duration"`,    // the stdout metric exporter's last export
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %s", want)
		}
	}
	if !strings.Contains(text, "trace_id=") {
		t.Errorf("log records carry no trace ids")
	}
	if i, j := strings.LastIndex(text, `"Name":`), strings.Index(text, "research tasks, traced"); j < i {
		t.Errorf("the summary (at %d) is not after the exporters' output (up to %d)", j, i)
	}
	if t.Failed() {
		t.Logf("output:\n%s", text)
	}
}

// TestServe: -serve binds the port, the summary's metrics are scraped
// over it, and it serves until interrupted; a taken port is an error.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &untilWriter{until: "serving http://", then: cancel}
	if err := run(ctx, w, config{listen: "127.0.0.1:0", tasks: 1, serve: true}); err != nil {
		t.Fatalf("%v\n%s", err, w.String())
	}
	if text := w.String(); !strings.Contains(text, "clutch_task_started_total") || !strings.Contains(text, "/metrics until interrupted") {
		t.Errorf("-serve output:\n%s", text)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := run(context.Background(), io.Discard, config{listen: ln.Addr().String(), tasks: 1, serve: true}); err == nil {
		t.Error("-serve on a taken port: no error")
	}
}

// untilWriter calls then once the text written contains until.
type untilWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	until string
	then  func()
}

func (w *untilWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if w.then != nil && strings.Contains(w.buf.String(), w.until) {
		w.then()
		w.then = nil
	}
	return n, err
}

func (w *untilWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
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
