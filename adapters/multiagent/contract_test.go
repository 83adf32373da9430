package multiagent_test

import (
	"os"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/multiagent"
	"github.com/clutchprotocol/clutch/protocol"
)

// examples returns the canonical examples and the handshake of docs/protocol.md §12
// (01..04); the template 00 is not a message.
func examples(t testing.TB) []adaptertest.Case {
	return adaptertest.Files(t, "testdata/examples/0[1-9]-*.json", 4)
}

func template(t testing.TB) []byte {
	b, err := os.ReadFile("testdata/examples/00-envelope-template.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var invalid = []adaptertest.Case{
	{Name: "other protocol", Raw: []byte(`{"protocol":"multiagent-2.0","role":"agent","timestamp":"2025-10-10T12:00:00Z","intent":"plan","task":"x","content":{"type":"text","text":"y"}}`), Code: protocol.CodeUnsupportedVersion},
	{Name: "no content", Raw: []byte(`{"protocol":"multiagent-1.0","role":"agent","timestamp":"2025-10-10T12:00:00Z","intent":"plan","task":"x"}`), Code: protocol.CodeMissingField},
	{Name: "bad timestamp", Raw: []byte(`{"protocol":"multiagent-1.0","role":"agent","timestamp":"yesterday","intent":"plan","task":"x","content":{"type":"text"}}`), Code: protocol.CodeInvalidField},
	{Name: "score 1.5", Raw: []byte(`{"protocol":"multiagent-1.0","role":"agent","timestamp":"2025-10-10T12:00:00Z","intent":"plan","task":"x","content":{"type":"text"},"confidence":{"score":1.5}}`), Code: protocol.CodeInvalidField},
}

func TestContract(t *testing.T) {
	adaptertest.Run(t, multiagent.New(nil), &adaptertest.Options{
		Valid:   examples(t),
		Invalid: append(invalid, adaptertest.Case{Name: "the template", Raw: template(t), Code: protocol.CodeInvalidField}),
		Equal:   adaptertest.EqualOptions{NullIsAbsent: true},
	})
}
