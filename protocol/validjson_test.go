package protocol

import (
	"bytes"
	"strings"
	"testing"
)

var validJSONSeeds = []string{
	`{"a":[1,-2.5e3,true,null,{"b":"\u00e9"}]}`, `"x"`, `12345678901234567890.5`, `[]`, ` {} `, `{ "a" : [ ] , "b" : { } }`,
	`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":{"a":1},"b":{"a":2}}`, `[{"a":1},{"a":1}]`, `{"a":{"b":1},"b":1}`,
	`"\ud800"`, "\"\xff\"", `{} x`, "\xef\xbb\xbf{}", `[1,]`, `{"a":1,}`, `{,}`, `[,1]`, `{"a"}`, `{"a":}`, `{"a" 1}`,
	``, ` `, `-`, `-0`, `01`, `1.`, `1e`, `1e+`, `.5`, `tru`, `nul`, `falsey`, `[true false]`, `{"a":1 "b":2}`,
	`[1}`, `{"a":1]`, `]`, `}`, `"`, `"\`, `"\q"`, "\"a\tb\"", `"\u12"`, `"\ud83d\ude00"`, `{"k":"日本"}`,
	`{"title":"Market analysis","findings":["a","b","c"],"citations":["https://example.com/x"]}`,
	strings.Repeat("[", 63) + strings.Repeat("]", 63), strings.Repeat("[", 64) + strings.Repeat("]", 64),
	strings.Repeat("[", 65) + strings.Repeat("]", 65), strings.Repeat(`{"a":`, 64) + "1" + strings.Repeat("}", 64),
}

// checkValidJSON fails when validJSON accepts what checkJSON refuses, or
// refuses a value checkJSON accepts although it is one validJSON must
// handle (no escape, few keys, shallow).
func checkValidJSON(t *testing.T, data []byte) {
	t.Helper()
	fast, err := validJSON(data), checkJSON(data, "")
	if fast && err != nil {
		t.Fatalf("validJSON accepts %q, which checkJSON refuses: %v", data, err)
	}
	if !fast && err == nil && !bytes.Contains(data, []byte{'\\'}) && bytes.Count(data, []byte{'"'}) < 2*32 &&
		bytes.Count(data, []byte{'['})+bytes.Count(data, []byte{'{'}) < 64 {
		t.Fatalf("validJSON refuses %q, which checkJSON accepts", data)
	}
}

// FuzzValidJSON: the one-loop check never accepts what the scanner refuses.
func FuzzValidJSON(f *testing.F) {
	for _, s := range validJSONSeeds {
		f.Add([]byte(s))
	}
	addFileSeeds(f, "examples/*.json", "signed/*.json")
	f.Fuzz(checkValidJSON)
}

// TestValidJSONMatchesScanner runs the comparison of FuzzValidJSON on the
// seeds and on random edits of them (a byte changed, inserted or removed),
// so that plain go test covers it.
func TestValidJSONMatchesScanner(t *testing.T) {
	r := seededRand(t, 8, 13)
	special := []byte(`{}[]:,"\ -.0e+1tfnu` + "\xff\t")
	var accepted int
	for _, s := range validJSONSeeds {
		checkValidJSON(t, []byte(s))
		for range 3000 {
			b := []byte(s)
			for range 1 + r.IntN(3) {
				c := special[r.IntN(len(special))]
				switch p := r.IntN(len(b) + 1); {
				case r.IntN(3) == 0:
					b = append(b[:p], append([]byte{c}, b[p:]...)...)
				case p < len(b) && r.IntN(2) == 0:
					b[p] = c
				case p < len(b):
					b = append(b[:p], b[p+1:]...)
				}
			}
			checkValidJSON(t, b)
			if validJSON(b) {
				accepted++
			}
		}
	}
	t.Logf("%d edited values accepted", accepted)
	if accepted < 1000 {
		t.Fatalf("only %d edited values accepted: the test does not reach the accepting paths", accepted)
	}
}
