package clowl_test

import (
	"context"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/clowl"
)

// FuzzInbound checks the adapter contract on any input (strict and
// lenient): no panic, typed errors, valid envelopes, and a stable round
// trip for what is accepted. The seed corpus is the 21 examples and the
// invalid cases.
func FuzzInbound(f *testing.F) {
	for _, c := range examples(f) {
		f.Add(c.Raw, false)
		f.Add(c.Raw, true)
	}
	for _, c := range invalid {
		f.Add(c.Raw, true)
	}
	strict, lenient := clowl.New(nil), clowl.New(&clowl.Options{Lenient: true})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, raw []byte, isLenient bool) {
		a := strict
		ignore := []string(nil)
		if isLenient {
			a, ignore = lenient, []string{"/meta/coercions"}
		}
		msgs, err := adaptertest.CheckInbound(ctx, a, raw)
		if err != nil {
			t.Fatal(err)
		}
		if msgs == nil {
			return
		}
		if en, err := clowl.EnglishOf(msgs[0]); err != nil {
			t.Fatalf("no English for an inbound message: %v", err)
		} else if !oneLine(en) {
			t.Fatalf("the English is not one line of visible text: %q", en)
		}
		if !a.CanHandle(msgs[0]) {
			t.Fatalf("CanHandle refuses an inbound %s", msgs[0].Type)
		}
		if err := adaptertest.CheckFixpoint(ctx, a, msgs[0], ignore...); err != nil {
			t.Fatal(err)
		}
	})
}
