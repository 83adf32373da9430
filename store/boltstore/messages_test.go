package boltstore

import (
	"errors"
	"strings"
	"testing"
)

// TestCorruptSaidOnce: a damaged record read as an event says "boltstore:
// corrupt file" once, then where and what.
func TestCorruptSaidOnce(t *testing.T) {
	e := sampleEntry()
	rec := appendRecord(nil, &e)
	sealRecord(rec, bodySum(rec), 1234567890)
	rec[len(rec)-1] ^= 1
	_, cause := parseRecord(rec, 0)
	if cause == nil {
		t.Fatal("a damaged record decodes")
	}
	err := corrupt("event %d: %v", 296, cause)
	if !errors.Is(err, ErrCorrupt) || strings.Count(err.Error(), "corrupt file") != 1 ||
		!strings.HasPrefix(err.Error(), "boltstore: corrupt file: event 296: ") {
		t.Fatalf("%q: want \"boltstore: corrupt file: event 296: …\" with the prefix once", err)
	}
	if strings.TrimPrefix(err.Error(), "boltstore: corrupt file: event 296: ") != strings.TrimPrefix(cause.Error(), "boltstore: corrupt file: ") {
		t.Fatalf("%q lost the detail of %q", err, cause)
	}
}
