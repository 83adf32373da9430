package protocol

// validCapabilityRef and the segment checks as they were before they were
// made one pass each, and the exhaustive tests that compare them.

import (
	"strings"
	"testing"
)

func refValidCapabilityRef(s string) bool {
	if len(s) > MaxIDLength {
		return false
	}
	kind, name, ok := strings.Cut(s, ":")
	if !ok || kind == "" || name == "" {
		return false
	}
	for i := 0; i < len(kind); i++ {
		if c := kind[i]; !(isLowerAlnum(c) || c == '_' || c == '-') {
			return false
		}
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// refValidSegments reports whether s is non-empty segments of name characters
// separated by sep.
func refValidSegments(s string, sep byte) bool {
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == sep {
			if i == start || !refIsNameSeg(s[start:i]) {
				return false
			}
			start = i + 1
		}
	}
	return true
}

func refIsNameSeg(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isNameChar(s[i]) {
			return false
		}
	}
	return true
}

// TestValidCapabilityRefMatchesReference compares the one-pass check with
// the reference on every short string over the bytes that matter.
func TestValidCapabilityRefMatchesReference(t *testing.T) {
	alphabet := []byte{'a', 'z', '0', '9', '_', '-', ':', 'A', ' ', 0x7f, 0x1f, '.', 0xc3, 0xa9, '!'}
	var rec func(b []byte)
	rec = func(b []byte) {
		if got, want := validCapabilityRef(string(b)), refValidCapabilityRef(string(b)); got != want {
			t.Fatalf("validCapabilityRef(%q) = %v, reference %v", b, got, want)
		}
		if len(b) == 5 {
			return
		}
		for _, c := range alphabet {
			rec(append(b, c))
		}
	}
	rec(nil)
	long := strings.Repeat("k", MaxIDLength-2)
	for _, s := range []string{long + ":n", long + "x:n", "skill:" + strings.Repeat("n", MaxIDLength-6), "skill:" + strings.Repeat("n", MaxIDLength-5)} {
		if got, want := validCapabilityRef(s), refValidCapabilityRef(s); got != want {
			t.Fatalf("validCapabilityRef(len %d) = %v, reference %v", len(s), got, want)
		}
	}
}

// TestValidSegmentsMatchesReference compares the one-pass check with the
// reference on every string of up to 6 bytes over the bytes that matter,
// for both separators.
func TestValidSegmentsMatchesReference(t *testing.T) {
	alphabet := []byte{'a', 'Z', '0', '_', '-', '.', '/', '@', ' ', 0xc3}
	var rec func(b []byte)
	rec = func(b []byte) {
		for _, sep := range []byte{'.', '/'} {
			if got, want := validSegments(string(b), sep), refValidSegments(string(b), sep); got != want {
				t.Fatalf("validSegments(%q, %q) = %v, reference %v", b, sep, got, want)
			}
		}
		if len(b) == 6 {
			return
		}
		for _, c := range alphabet {
			rec(append(b, c))
		}
	}
	rec(nil)
}
