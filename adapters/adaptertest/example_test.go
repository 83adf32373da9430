package adaptertest_test

import (
	"fmt"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
)

// JSONEqual compares JSON values, not bytes, and names the first
// difference.
func ExampleJSONEqual() {
	in := []byte(`{"mid":"m1","pid":null,"body":{"t":"search","d":{"q":"x","n":1.0}}}`)
	out := []byte(`{"body":{"d":{"n":1,"q":"x"},"t":"search"},"mid":"m1"}`)
	fmt.Println(adaptertest.JSONEqual(in, out, nil))
	fmt.Println(adaptertest.JSONEqual(in, out, &adaptertest.EqualOptions{NullIsAbsent: true}))
	// Output:
	// /pid: missing (want null)
	// <nil>
}

// Mutations gives the re-typed and removed variants Run feeds an adapter.
func ExampleMutations() {
	ms := adaptertest.Mutations([]byte(`{"p":"REQ"}`))
	fmt.Println(len(ms), string(ms["/p removed"]), string(ms["/p = #8"]))
	// Output:
	// 16 {} {"p":true}
}
