// Package adaptertest checks any adapters.Adapter against the contract of
// package adapters (docs/protocol.md §7.2 in Go), the way testing/fstest.TestFS
// checks an fs.FS and storetest.Run checks a store:
//
//	func TestContract(t *testing.T) {
//		adaptertest.Run(t, myadapter.New(nil), &adaptertest.Options{
//			Valid:   loadFixtures(t, "testdata/*.json"), // real payloads of the outside system
//			Invalid: []adaptertest.Case{{Name: "no id", Raw: []byte(`{...}`), Code: protocol.CodeMissingField}},
//		})
//	}
//
// # What Run checks
//
//   - Real payloads pass Inbound, and every message it returns passes
//     protocol.Message.Validate (a tool event protocol.CheckToolCallID
//     too: it names its call, docs/protocol.md §2.3.1) and survives
//     protocol.Encode and protocol.Decode, as the event store needs.
//   - Garbage never panics and is refused with a typed error: every prefix
//     of each valid payload, byte flips, duplicate keys, invalid UTF-8,
//     lone surrogates, each member and element replaced by a value of
//     every other JSON type or removed, deep nesting, oversize and random
//     input. A refusal must be an *adapters.Error of the adapter, with a
//     code of the protocol error table, matching adapters.ErrInbound.
//     Its Code must be the code protocol.CodeOf reads, which is the code
//     of a *protocol.Error it wraps when it wraps one (the rule of
//     adapters.Error); Case.Code is compared with that code.
//     Inputs an adapter chooses to accept must still give valid messages.
//   - Round trips keep what the mapping promises: Outbound of the first
//     inbound message gives back the input (JSONEqual, or the adapter's own
//     comparison), and translating that output again gives the same
//     envelope (CheckFixpoint).
//   - Inbound is safe for concurrent use (run the tests with -race), and
//     Outbound of odd envelopes fails only with typed errors.
//
// # Rules beyond the shape of the input
//
// RunRules checks what every adapter must hold whatever its format, with
// mutations of the valid payloads and whole streams:
//
//   - a string grown to just under the adapter's input limit gives
//     envelopes the event store can hold, each holding the text once
//     (CheckStorable);
//   - an id-like member of 300 or 5000 bytes is refused with
//     INVALID_FIELD or still gives valid envelopes;
//   - indenting an input, or one with a duplicate key at any depth,
//     changes nothing: accepted or refused with the same code;
//   - Secret planted under credential names (authorization, x-api-key,
//     cookie, token, …) in any object never reaches an envelope;
//   - a Detector recognises everything Inbound accepts;
//   - every task ends at most once over a whole stream (CheckTerminal);
//   - every tool outcome answers a call of its own task, once
//     (CheckToolCalls, docs/protocol.md §2.3.1).
//
// A translator runs it next to Run:
//
//	func TestRules(t *testing.T) {
//		adaptertest.RunRules(t, myadapter.New(nil), &adaptertest.RulesOptions{
//			Valid:    loadFixtures(t, "testdata/*.json"),
//			Streams:  []adaptertest.Stream{{Name: "a run", Inputs: frames}},
//			MaxBytes: myadapter.DefaultMaxBytes,
//		})
//	}
//
// # Fuzzing
//
// CheckInbound, CheckOutbound and CheckFixpoint are the per-input checks
// Run uses; a fuzz target calls them so that the fuzzer searches for
// inputs that break the same contract:
//
//	func FuzzInbound(f *testing.F) {
//		for _, c := range fixtures { f.Add(c.Raw) }
//		a := myadapter.New(nil)
//		f.Fuzz(func(t *testing.T, raw []byte) {
//			msgs, err := adaptertest.CheckInbound(context.Background(), a, raw)
//			if err != nil {
//				t.Fatal(err)
//			}
//			if msgs != nil && a.CanHandle(msgs[0]) {
//				if err := adaptertest.CheckFixpoint(context.Background(), a, msgs[0]); err != nil {
//					t.Fatal(err)
//				}
//			}
//		})
//	}
//
// # Caveats
//
// The package is a test helper: it imports testing, and nothing outside
// tests should import it. Its work grows with the number and size of the
// valid payloads; Options.MaxCuts and Options.Random bound it.
package adaptertest
