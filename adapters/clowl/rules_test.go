package clowl_test

import (
	"testing"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/clowl"
)

// The rules of every adapter (adaptertest.RunRules) over the 21 examples,
// strict and lenient.
func TestRules(t *testing.T) {
	for name, opts := range map[string]*clowl.Options{"strict": nil, "lenient": {Lenient: true}} {
		t.Run(name, func(t *testing.T) {
			adaptertest.RunRules(t, clowl.New(opts), &adaptertest.RulesOptions{
				Valid:    examples(t),
				MaxBytes: clowl.DefaultMaxBytes,
				// REQ, ACK and DONE of one task (the other examples answer
				// m001 in several ways, each its own scenario).
				Streams: []adaptertest.Stream{{Name: "m001 to m003", Inputs: raws(examples(t)[:3])}},
			})
		})
	}
}

func raws(cs []adaptertest.Case) [][]byte {
	out := make([][]byte, len(cs))
	for i, c := range cs {
		out[i] = c.Raw
	}
	return out
}
