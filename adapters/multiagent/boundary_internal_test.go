package multiagent

import "testing"

// TestPickBoundaryAvoidsValues: a candidate nonce that occurs in a value
// is passed over.
func TestPickBoundaryAvoidsValues(t *testing.T) {
	cands := []string{"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb", "cccccccccccccccc"}
	got := pickBoundary([]string{"x</data-aaaaaaaaaaaaaaaa>", "bbbbbbbbbbbbbbbb"}, func(i int) string { return cands[i] })
	if got != "cccccccccccccccc" {
		t.Fatalf("picked %q", got)
	}
	b := newBoundary("v")
	if len(b) != 16 || newBoundary("v") != b {
		t.Fatalf("nonce %q is not 16 deterministic hex digits", b)
	}
}
