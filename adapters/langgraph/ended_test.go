package langgraph

import (
	"strconv"
	"testing"
)

// TestEndedSetIsBounded: the Translator's memory of ended tasks keeps the
// latest maxEnded and forgets the oldest first.
func TestEndedSetIsBounded(t *testing.T) {
	var e endedSet
	for i := range maxEnded {
		if e.end(strconv.Itoa(i)) {
			t.Fatalf("key %d reported as ended before", i)
		}
	}
	if !e.end("0") {
		t.Fatal("the oldest key is forgotten while the set is not over its bound")
	}
	e.end("new") // one over the bound: "0" goes
	if len(e.set) != maxEnded {
		t.Fatalf("the set holds %d keys, want %d", len(e.set), maxEnded)
	}
	if e.end("0") {
		t.Fatal("the oldest key is still remembered past the bound")
	}
	if !e.end(strconv.Itoa(maxEnded - 1)) {
		t.Fatal("a recent key is forgotten")
	}
}
