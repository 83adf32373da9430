package adapters_test

import (
	"errors"
	"testing"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
)

// TestErrorCodeIsCodeOf: an *Error's code is the one protocol.CodeOf
// reads, the code of a *protocol.Error it wraps when it wraps one, and
// Code, Error() and errors.Is say the same code.
func TestErrorCodeIsCodeOf(t *testing.T) {
	_, decodeErr := protocol.DecodeAgentCard([]byte(`{"v":"clutch/9","agent_id":"agent:a","capabilities":[]}`))
	if protocol.CodeOf(decodeErr) != protocol.CodeUnsupportedVersion {
		t.Fatalf("decoding a card of another version: %v", decodeErr)
	}
	var card struct {
		Card protocol.AgentCard `json:"card"`
	}
	viaJSON := adapters.DecodeJSON("toy", []byte(`{"card":{"v":"clutch/9","agent_id":"agent:a","capabilities":[]}}`), &card)
	for name, err := range map[string]error{
		"InboundError with another code":  adapters.InboundError("toy", protocol.CodeInvalidField, "/card", "", decodeErr),
		"OutboundError with another code": adapters.OutboundError("toy", protocol.CodeWrongType, "", "", decodeErr),
		"JSONError of a card member":      viaJSON,
	} {
		var ae *adapters.Error
		if !errors.As(err, &ae) {
			t.Fatalf("%s: %T is not an *adapters.Error", name, err)
		}
		if ae.Code != protocol.CodeUnsupportedVersion || protocol.CodeOf(err) != protocol.CodeUnsupportedVersion {
			t.Errorf("%s: Code %s, CodeOf %s; want the wrapped UNSUPPORTED_VERSION in both (%v)", name, ae.Code, protocol.CodeOf(err), err)
		}
		if !errors.Is(err, protocol.CodeUnsupportedVersion) || errors.Is(err, protocol.CodeInvalidField) || errors.Is(err, protocol.CodeWrongType) {
			t.Errorf("%s: errors.Is matches a code other than UNSUPPORTED_VERSION (%v)", name, err)
		}
	}
	// Without a protocol error in the cause, the code given is the code.
	err := adapters.InboundError("toy", protocol.CodeInvalidField, "/x", "no x", errors.New("cause"))
	if err.Code != protocol.CodeInvalidField || protocol.CodeOf(err) != protocol.CodeInvalidField {
		t.Errorf("plain cause: Code %s, CodeOf %s, want INVALID_FIELD", err.Code, protocol.CodeOf(err))
	}
	if !errors.Is(err, adapters.ErrInbound) || protocol.CodeOf(adapters.ErrInbound) == "" {
		t.Errorf("plain cause: does not match ErrInbound")
	}
}
