package protocol

// validCapabilityRef and the segment checks as they were before they were
// made one pass each: the references the exhaustive tests in
// encodediff_test.go compare them with.

import (
	"strings"
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
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
