package langgraph_test

import (
	"bytes"
	"testing"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/adaptertest"
)

// The rules of every adapter (adaptertest.RunRules): bounded envelopes,
// long ids refused, formatting-blind strictness (pretty-printed duplicate
// keys included), no stored credentials, Detect for all it accepts, and
// one terminal event per task over each recorded run, whole and frame by
// frame.
func TestRules(t *testing.T) {
	recorded := adaptertest.Files(t, "testdata/recorded/*.sse", 6)
	var streams []adaptertest.Stream
	for _, c := range recorded {
		streams = append(streams,
			adaptertest.Stream{Name: c.Name, Inputs: [][]byte{c.Raw}},
			adaptertest.Stream{Name: c.Name + " frame by frame", Inputs: frames(c.Raw)})
	}
	adaptertest.RunRules(t, newTranslator(t), &adaptertest.RulesOptions{
		Valid:   fixtures(t),
		Streams: streams,
		New:     func() adapters.Adapter { return newTranslator(t) },
		Credentials: []adaptertest.Case{{
			Name: "error run webhook echoing headers",
			Raw:  []byte(`{"run_id":"r1","thread_id":"t1","assistant_id":"a1","status":"error","metadata":{"headers":{"authorization":"Bearer ` + adaptertest.Secret + `","x-api-key":"` + adaptertest.Secret + `","cookie":"s=` + adaptertest.Secret + `"}},"kwargs":{"config":{"configurable":{"authorization":"Bearer ` + adaptertest.Secret + `"}}},"created_at":"2026-11-26T00:00:00Z","updated_at":"2026-11-26T00:00:01Z"}`),
		}},
	})
}

// frames splits an SSE capture into its events (blank-line separated).
func frames(sse []byte) [][]byte {
	var out [][]byte
	for _, f := range bytes.Split(bytes.ReplaceAll(sse, []byte("\r\n"), []byte("\n")), []byte("\n\n")) {
		if len(bytes.TrimSpace(f)) > 0 {
			out = append(out, append(bytes.Clone(f), "\n\n"...))
		}
	}
	return out
}
