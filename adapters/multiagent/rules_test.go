package multiagent_test

import (
	"testing"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/multiagent"
)

// The rules of every adapter (adaptertest.RunRules) over the examples.
func TestRules(t *testing.T) {
	ex := examples(t)
	inputs := make([][]byte, len(ex))
	for i, c := range ex {
		inputs[i] = c.Raw
	}
	adaptertest.RunRules(t, multiagent.New(nil), &adaptertest.RulesOptions{
		Valid:   ex,
		Streams: []adaptertest.Stream{{Name: "the examples in order", Inputs: inputs}},
	})
}
