package adapters

import (
	"encoding/json"
	"errors"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/protocol"
)

// DecodeJSON decodes the outside input raw into v strictly: raw must be
// one JSON value the event store would accept (valid UTF-8 without lone
// surrogates, no duplicate name at any depth, at most
// protocol.DefaultMaxDepth levels: the envelope codec's own check, with
// its codes), and v is filled by go-json-experiment/json. A refusal is an
// inbound [*Error] of adapter with the code and the JSON pointer of the
// offending value (see [JSONError]).
func DecodeJSON(adapter string, raw []byte, v any) error {
	var probe protocol.Message
	if err := probe.SetPayload(json.RawMessage(raw)); err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return InboundError(adapter, pe.Code, strings.TrimPrefix(pe.Path, "/payload"), pe.Detail, nil)
		}
		return InboundError(adapter, protocol.CodeInvalidJSON, "", "", err)
	}
	if err := jsonv2.Unmarshal(raw, v); err != nil {
		return JSONError(adapter, "", err)
	}
	return nil
}

// JSONError turns an error of go-json-experiment/json or its jsontext
// package into an inbound [*Error] of adapter: DUPLICATE_KEY for a
// duplicate name, INVALID_UTF8 for invalid UTF-8, INVALID_JSON for other
// syntax errors, WRONG_TYPE for a value of the wrong JSON kind; its Path is
// base followed by the error's JSON pointer, so that an adapter decoding a
// member at base names the offending field within the whole input.
func JSONError(adapter, base string, err error) *Error {
	code, path := protocol.CodeInvalidJSON, base
	var syn *jsontext.SyntacticError
	var sem *jsonv2.SemanticError
	switch {
	case errors.As(err, &syn):
		path += string(syn.JSONPointer)
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			code = protocol.CodeDuplicateKey
		case syn.Err != nil && strings.Contains(syn.Err.Error(), "UTF-8"):
			// jsontext exports no sentinel for invalid UTF-8.
			code = protocol.CodeInvalidUTF8
		}
	case errors.As(err, &sem):
		path += string(sem.JSONPointer)
		code = protocol.CodeWrongType
	}
	return InboundError(adapter, code, path, "", err)
}
