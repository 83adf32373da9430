package multiagent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/multiagent"
)

// FuzzInbound checks the adapter contract on any input: no panic, typed
// errors, valid envelopes, and a stable round trip for what is accepted.
// The seed corpus is the examples of docs/protocol.md §12, the template and the prompt
// cases.
func FuzzInbound(f *testing.F) {
	files, _ := filepath.Glob("testdata/examples/*.json")
	more, _ := filepath.Glob("testdata/prompt-cases/*.json")
	for _, p := range append(files, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, c := range invalid {
		f.Add(c.Raw)
	}
	a := multiagent.New(nil)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, raw []byte) {
		msgs, err := adaptertest.CheckInbound(ctx, a, raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if !a.CanHandle(m) {
				t.Fatalf("CanHandle refuses an inbound %s", m.Type)
			}
		}
		if msgs != nil {
			if err := adaptertest.CheckFixpoint(ctx, a, msgs[0]); err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if _, err := multiagent.ClaudePrompt(m); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
