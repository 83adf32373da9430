package coded

import (
	"errors"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
)

func TestWrap(t *testing.T) {
	s := New("pkg: not found", protocol.CodeNotFound)
	cause := &protocol.Error{Code: protocol.CodeInvalidField, Offset: -1}
	err := Wrap(s, "agent:x", cause)
	if !errors.Is(err, s) || !errors.Is(err, protocol.CodeInvalidField) {
		t.Fatal("Is")
	}
	if err.Error() != "pkg: not found: agent:x: INVALID_FIELD" {
		t.Fatalf("Error() = %q", err.Error())
	}
	if protocol.CodeOf(Wrap(s, "", nil)) != protocol.CodeNotFound {
		t.Fatal("CodeOf")
	}
}

func TestSentinelMatchesItsCode(t *testing.T) {
	s := New("pkg: too large", protocol.CodeTooLarge)
	err := Wrap(s, "5 MiB", nil)
	if !errors.Is(err, protocol.CodeTooLarge) || errors.Is(err, protocol.CodeTimeout) {
		t.Fatal("a wrapped sentinel does not match exactly its code")
	}
}
