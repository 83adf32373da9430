package protocol

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// jsonEqual compares two raw JSON values by meaning.
func jsonEqual(a, b json.RawMessage) bool {
	ca, err1 := Canonical(a)
	cb, err2 := Canonical(b)
	if err1 != nil || err2 != nil {
		return string(a) == string(b)
	}
	return string(ca) == string(cb)
}

// extractMember returns the raw value of a top-level member.
func extractMember(t testing.TB, data []byte, name string) []byte {
	t.Helper()
	var top map[string]jsontext.Value
	if err := jsonv2.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	return top[name]
}

func json_number(s string) json.Number { return json.Number(s) }

// seededRand returns a PCG source with the given seed, logged so that a
// failing randomised test can be rerun as it was.
func seededRand(t testing.TB, seed1, seed2 uint64) *rand.Rand {
	t.Helper()
	t.Logf("seed %d %d", seed1, seed2)
	return rand.New(rand.NewPCG(seed1, seed2))
}
