package clowl

import (
	_ "embed"
	"errors"
	"github.com/clutchprotocol/clutch/internal/coded"
	"sync"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
)

// SchemaJSON is the CLowl v0.2 JSON Schema (Draft-07, MIT, Oscar Sterling
// Agency; see testdata/SOURCE.txt for provenance), byte for byte.
//
//go:embed clowl-schema.v0.2.json
var SchemaJSON []byte

// schemaPayloadType is the name the schema is registered under in the
// package's own schema registry (a payload_type needs a .v<N> suffix).
const schemaPayloadType = "clowl.message.v0"

var (
	schemaOnce sync.Once
	schemaReg  *schema.Registry
	schemaErr  error
)

// messageSchema returns the compiled schema. The registry is the
// package's own (no built-ins): the CLowl schema is a wire format, not a
// Clutch payload type, and must not appear in anyone else's registry.
func messageSchema() (*schema.Registry, error) {
	schemaOnce.Do(func() {
		schemaReg, schemaErr = schema.New(&schema.Options{NoBuiltins: true})
		if schemaErr == nil {
			schemaErr = schemaReg.Register(schemaPayloadType, SchemaJSON)
		}
	})
	return schemaReg, schemaErr
}

// Validate checks raw against the CLowl v0.2 JSON Schema only. The error
// is an *adapters.Error naming the first violation (its code: MISSING_FIELD
// for "required", UNKNOWN_FIELD for "additionalProperties", WRONG_TYPE for
// "type" and "oneOf", UNSUPPORTED_VERSION for the version's "const",
// INVALID_FIELD for the rest) whose cause chain holds ErrSchema and the
// *schema.ValidationError with every violation.
func Validate(raw []byte) error { return validateSchema(raw) }

func validateSchema(raw []byte) error {
	reg, err := messageSchema()
	if err != nil {
		return inErr(protocol.CodeInternal, "", "the embedded CLowl schema does not compile", err)
	}
	err = reg.Validate(schemaPayloadType, raw)
	if err == nil {
		return nil
	}
	var ve *schema.ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) == 0 {
		return inErr(protocol.CodeOf(err), "", "", err)
	}
	v := ve.Violations[0]
	for _, c := range ve.Violations {
		if !structural(c.Keyword) {
			v = c
			break
		}
	}
	code := protocol.CodeInvalidField
	switch v.Keyword {
	case "required":
		code = protocol.CodeMissingField
	case "additionalProperties":
		code = protocol.CodeUnknownField
	case "type", "oneOf":
		code = protocol.CodeWrongType
	case "const":
		if v.Path == "/clowl" {
			code = protocol.CodeUnsupportedVersion
		}
	}
	return inErr(code, v.Path, v.Keyword+": "+v.Message, coded.Wrap(ErrSchema, "", ve))
}

// structural keywords only say that a sub-schema failed; the violation of
// that sub-schema is the useful one.
func structural(kw string) bool {
	switch kw {
	case "if", "then", "else", "allOf", "anyOf", "oneOf", "not":
		return true
	}
	return false
}

// asOutbound turns a schema error found while encoding into an outbound
// error.
func asOutbound(err error) error {
	var ae *adapters.Error
	if errors.As(err, &ae) {
		return outErr(ae.Code, ae.Path, "the CLowl message would break the schema: "+ae.Detail, ae.Err)
	}
	return outErr(protocol.CodeInternal, "", "", err)
}
