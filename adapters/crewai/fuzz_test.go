package crewai_test

import (
	"context"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/crewai"
)

// FuzzInbound checks the adapter contract on any input (the one decoder:
// every crewAI shape goes through Inbound): no panic, typed errors, valid
// envelopes, and Outbound of what it accepts fails only with typed errors.
// The seed corpus is every fixture and the invalid cases.
func FuzzInbound(f *testing.F) {
	for _, c := range allFixtures(f) {
		f.Add(c.Raw)
	}
	for _, c := range invalid {
		f.Add(c.Raw)
	}
	f.Add([]byte(`{"type":"tool_usage_started","event_id":"e","timestamp":"2025-10-08T18:18:11Z","tool_name":"Delegate work to coworker","tool_args":"{\"coworker\":\"A\"}"}`))
	a := crewai.New(nil)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, raw []byte) {
		msgs, err := adaptertest.CheckInbound(ctx, a, raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if _, err := adaptertest.CheckOutbound(ctx, a, m); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzWebhook feeds any body to the Crew's webhook handler with the right
// token: it never panics and answers 202 or a 4xx with a JSON error.
func FuzzWebhook(f *testing.F) {
	for _, c := range allFixtures(f) {
		f.Add(c.Raw)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		code := postWebhook(t, body)
		if code != 202 && (code < 400 || code >= 500) {
			t.Fatalf("status %d", code)
		}
	})
}
