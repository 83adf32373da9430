package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestApprovalExample: the run waits for the editor; answered through the
// API, it publishes the note as approved, as edited, or not at all.
func TestApprovalExample(t *testing.T) {
	for _, tc := range []struct {
		name, value, want string
	}{
		{"approve", `{"decision":"approve"}`, `published: {"topic":"Nordic payments","text":"Three things to know about Nordic payments."}`},
		{"edit", `{"decision":"edit","arguments":{"topic":"Nordic payments","text":"Five things."}}`, `published: {"topic":"Nordic payments","text":"Five things."}`},
		{"reject", `{"decision":"reject","reason":"not this week"}`, "not published: publishing the note was rejected: not this week"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out bytes.Buffer
			if err := run(ctx, &out, approveByAPI(tc.value)); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			text := out.String()
			for _, want := range []string{
				"alice asked for a note: task task_",
				"the writer asks: Approve publishing the note?",
				`  draft: {"text":"Three things to know about Nordic payments.","topic":"Nordic payments"}`,
				"go run ./cmd/clutch answer task_",
				tc.want,
			} {
				if !strings.Contains(text, want) {
					t.Errorf("output lacks %q:\n%s", want, text)
				}
			}
		})
	}
}
