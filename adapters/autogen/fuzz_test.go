package autogen_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/autogen"
)

func seeds(f *testing.F) {
	for _, c := range agentchatCases(f) {
		f.Add(c.Raw)
	}
	for _, c := range coreCases(f) {
		f.Add(c.Raw)
	}
	for _, c := range invalid {
		f.Add(c.Raw)
	}
}

// FuzzInbound checks the adapter contract on any input: no panic, typed
// errors, valid envelopes, and a stable round trip for what Outbound
// takes.
func FuzzInbound(f *testing.F) {
	seeds(f)
	a := newAdapter()
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, raw []byte) {
		msgs, err := adaptertest.CheckInbound(ctx, a, raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if a.CanHandle(m) {
				if _, err := adaptertest.CheckOutbound(ctx, a, m); err != nil {
					t.Fatal(err)
				}
			}
		}
		// An event of several calls without an AutoGen id goes out as its
		// first call: another event, with another derived id and run.
		if len(msgs) > 0 && a.CanHandle(msgs[0]) && !(msgs[0].Meta[autogen.MetaDerivedID] == true && msgs[0].Meta[autogen.MetaParts] != nil) {
			if err := adaptertest.CheckFixpoint(ctx, a, msgs[0], "/meta/part", "/meta/parts"); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzHandler posts any body, as one JSON value and as JSON lines: the
// answer is 200 or a 4xx, never a 5xx, and a refused body stores nothing.
func FuzzHandler(f *testing.F) {
	seeds(f)
	for _, name := range []string{"agentchat_tool_call_round.jsonl", "agentchat_events_constructed.jsonl"} {
		f.Add(read(f, name))
	}
	e := newEndpoint(f, nil)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, ct := range []string{"application/json", ndjson} {
			before := e.lastSeq(t)
			req := httptest.NewRequest("POST", "/autogen/runs/fuzz", bytes.NewReader(body))
			req.Header.Set("X-API-Key", kenKey)
			req.Header.Set("Content-Type", ct)
			w := httptest.NewRecorder()
			e.mux.ServeHTTP(w, req)
			switch {
			case w.Code == http.StatusOK:
			case w.Code >= 400 && w.Code < 500:
				if after := e.lastSeq(t); after != before {
					t.Fatalf("%s: refused with %d but stored %d events", ct, w.Code, after-before)
				}
			default:
				t.Fatalf("%s: status %d: %s", ct, w.Code, w.Body)
			}
		}
	})
}
