package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestA2AExample(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		`[client] card "Ken": skill skill:research, streaming true`,
		"[server] task.request  from agent:example-client, a2a.content.v1",
		"[server] task.accept   from agent:ken",
		`[server] task.progress from agent:ken {"text":"reading 3 sources"}`,
		"[server] task.result   from agent:ken, research.summary.v1",
		"[client] task     TASK_STATE_SUBMITTED",
		"[client] status   TASK_STATE_WORKING: searching the web",
		"[client] artifact result: text Market analysis: fintech payments in Europe; data (research.summary.v1)",
		"[client] status   TASK_STATE_COMPLETED",
		": TASK_STATE_COMPLETED, 1 artifact(s), context thr_",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// Each side sees its events in order.
	for _, order := range [][]string{
		{"[server] task.request", "[server] task.accept", "[server] task.progress", "[server] task.result"},
		{"[client] task ", "[client] status   TASK_STATE_WORKING", "[client] artifact", "[client] status   TASK_STATE_COMPLETED", "GetTask"},
	} {
		pos := 0
		for _, s := range order {
			i := strings.Index(text[pos:], s)
			if i < 0 {
				t.Fatalf("%q missing or out of order:\n%s", s, text)
			}
			pos += i
		}
	}
}
