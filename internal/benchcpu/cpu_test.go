//go:build unix

package benchcpu

import "testing"

// Work done between two readings shows as CPU time used.
func TestProcessGrows(t *testing.T) {
	before := Process()
	x := 0
	for i := range 50_000_000 {
		x ^= i
	}
	if after := Process(); after <= before {
		t.Fatalf("CPU time went from %v to %v over a busy loop (%d)", before, after, x)
	}
}
