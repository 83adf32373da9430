package clowl_test

import (
	"testing"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/clowl"
	"github.com/clutchprotocol/clutch/protocol"
)

// examples returns the 21 example messages of examples-v0.2.md.
func examples(t testing.TB) []adaptertest.Case {
	return adaptertest.Files(t, "testdata/examples-v0.2/*.json", 21)
}

var invalid = []adaptertest.Case{
	{Name: "version 0.1", Raw: []byte(`{"clowl":"0.1","mid":"m","ts":1,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"x","d":{}}}`), Code: protocol.CodeUnsupportedVersion},
	{Name: "v0.1 cl", Raw: []byte(`{"cl":"0.1","mid":"m","p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"x","d":{}},"ctx":"r"}`), Code: protocol.CodeUnsupportedVersion},
	{Name: "no mid", Raw: []byte(`{"clowl":"0.2","ts":1,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"x","d":{}}}`), Code: protocol.CodeMissingField},
	{Name: "DLGT without mode", Raw: []byte(`{"clowl":"0.2","mid":"m","ts":1,"p":"DLGT","from":"a","to":"b","cid":"c","body":{"t":"x","d":{}}}`), Code: protocol.CodeMissingField},
	{Name: "unknown member", Raw: []byte(`{"clowl":"0.2","mid":"m","ts":1,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"x","d":{}},"x":1}`), Code: protocol.CodeUnknownField},
}

func TestContract(t *testing.T) {
	adaptertest.Run(t, clowl.New(nil), &adaptertest.Options{
		Valid: examples(t), Invalid: invalid,
		Equal: adaptertest.EqualOptions{NullIsAbsent: true},
	})
}

// The lenient adapter keeps the same contract; the repairs it reports in
// meta.coercions are the only difference a second translation may show.
func TestContractLenient(t *testing.T) {
	adaptertest.Run(t, clowl.New(&clowl.Options{Lenient: true}), &adaptertest.Options{
		Valid: examples(t), Invalid: invalid[:2],
		Equal:          adaptertest.EqualOptions{NullIsAbsent: true},
		FixpointIgnore: []string{"/meta/coercions"},
		MaxCuts:        256,
		Seed:           2,
	})
}
