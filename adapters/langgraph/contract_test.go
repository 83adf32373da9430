package langgraph_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/langgraph"
	"github.com/clutchprotocol/clutch/protocol"
)

func newTranslator(t testing.TB) *langgraph.Translator {
	t.Helper()
	tr, err := langgraph.New(&langgraph.Options{Now: func() time.Time { return time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC) }})
	require.NoError(t, err)
	return tr
}

// fixtures are the recorded LangGraph outputs (each with its .source.md).
func fixtures(t testing.TB) []adaptertest.Case {
	var cs []adaptertest.Case
	for _, pat := range []struct {
		glob string
		n    int
	}{{"testdata/fixtures/*.jsonl", 6}, {"testdata/fixtures/*.json", 2}, {"testdata/fixtures/*.sse", 2}} {
		cs = append(cs, adaptertest.Files(t, pat.glob, pat.n)...)
	}
	return cs
}

func TestContract(t *testing.T) {
	adaptertest.Run(t, newTranslator(t), &adaptertest.Options{
		Valid:       fixtures(t),
		NoRoundTrip: true,
		MaxCuts:     200,
		Invalid: []adaptertest.Case{
			{Name: "not langgraph", Raw: []byte(`{"hello":"world"}`), Code: protocol.CodeInvalidField},
			{Name: "empty array", Raw: []byte(`[]`), Code: protocol.CodeMissingField},
			{Name: "bad sse field", Raw: []byte("event: values\nfoo: bar\n\n"), Code: protocol.CodeInvalidField},
			{Name: "frame without data", Raw: []byte("event: values\ndata: \n\n"), Code: protocol.CodeMissingField},
			{Name: "duplicate key", Raw: []byte(`{"event":"values","data":{"a":1,"a":2}}`), Code: protocol.CodeDuplicateKey},
		},
	})
}

// Frames whose payload is their data round-trip through Outbound.
func TestContractRoundTrip(t *testing.T) {
	adaptertest.Run(t, newTranslator(t), &adaptertest.Options{
		Valid: []adaptertest.Case{
			{Name: "values", Raw: []byte(`{"event":"values","data":{"messages":[{"type":"human","content":"hi","id":"m1"}]}}`)},
			{Name: "updates", Raw: []byte(`{"event":"updates|agent:1f0","data":{"agent":{"count":1}},"id":"7"}`)},
			{Name: "custom", Raw: []byte(`{"event":"custom","data":{"progress":0.5}}`)},
			{Name: "unknown kind", Raw: []byte(`{"event":"feedback","data":{"key":"https://example.test/x"}}`)},
		},
		MaxCuts: 100,
	})
}

// Every fixture, and every capture of the real server, translates into one
// run and thread.
func TestFixturesInbound(t *testing.T) {
	tr := newTranslator(t)
	for _, c := range append(fixtures(t), adaptertest.Files(t, "testdata/recorded/*.sse", 6)...) {
		msgs, err := tr.Inbound(context.Background(), c.Raw)
		require.NoError(t, err, c.Name)
		require.NotEmpty(t, msgs, c.Name)
		for _, m := range msgs {
			require.Equal(t, msgs[0].RunID, m.RunID, c.Name)
			require.Equal(t, msgs[0].ThreadID, m.ThreadID, c.Name)
		}
	}
}
