package rulesapi_test

import (
	"io/fs"
	"testing"

	"github.com/clutchprotocol/clutch/rules/rulesapi"
)

// The request body decoders never panic, and what they accept holds the
// rules they promise.
func FuzzDecodeReview(f *testing.F) {
	for _, s := range []string{
		`{"author":"agent:host","id":"doc_1"}`,
		`{"author":"agent:host","id":"tmp-00","reason":"no"}`,
		`{"author":"agent:host"}`, `{"author":"a","id":"b","x":1}`, `{"author":"a","author":"b","id":"c"}`,
		`[]`, `null`, `{"author":"\xff","id":"x"}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := rulesapi.DecodeReview(body)
		if err == nil && (r.Author == "" || r.ID == "") {
			t.Fatalf("accepted %q without author or id", body)
		}
	})
}

func FuzzDecodeImport(f *testing.F) {
	for _, s := range []string{
		`{"files":{"rules/A.md":"# A"},"prune":true}`, `{"files":{}}`, `{}`,
		`{"files":{"../A.md":"x"}}`, `{"files":{"/A.md":"x"}}`, `{"files":{"a//b.md":"x"}}`,
		`{"files":{"a.md":1}}`, `{"files":{"a.md":"x","a.md":"y"}}`, `{"prune":"yes"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := rulesapi.DecodeImport(body)
		if err != nil {
			return
		}
		for name := range in.Files {
			if !fs.ValidPath(name) || name == "." {
				t.Fatalf("accepted file name %q", name)
			}
		}
	})
}
