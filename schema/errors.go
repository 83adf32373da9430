package schema

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Errors returned by the package wrap one
// of them with %w (or, for [*ValidationError], [*SchemaError] and
// [*WorkflowError], match them through errors.Is), so
// errors.Is(err, schema.ErrX) works through any wrapping. The code in
// brackets is the [protocol.Code] that [protocol.CodeOf] reports.
var (
	// ErrValidation: a payload or message does not satisfy its schema or
	// workflow step (docs/protocol.md §3). The detail is a [*ValidationError].
	// [VALIDATION]
	ErrValidation error = coded.New("schema: validation failed", protocol.CodeValidation)

	// ErrUnknownPayloadType: no schema is registered for the payload_type and
	// the registry is not permissive. [VALIDATION]
	ErrUnknownPayloadType error = coded.New("schema: unknown payload type", protocol.CodeValidation)

	// ErrInvalidPayloadType: the payload_type is not of the form
	// <domain>.<name>.v<N> (docs/protocol.md §3.2). [INVALID_FIELD]
	ErrInvalidPayloadType error = coded.New("schema: invalid payload type", protocol.CodeInvalidField)

	// ErrSchemaRefMismatch: a message's schema_ref is not the reference of
	// its payload_type (docs/protocol.md §3.2). [INVALID_FIELD]
	ErrSchemaRefMismatch error = coded.New("schema: schema_ref does not match payload_type", protocol.CodeInvalidField)

	// ErrInvalidJSON: a payload is not one well-formed JSON value. [INVALID_JSON]
	ErrInvalidJSON error = coded.New("schema: invalid JSON", protocol.CodeInvalidJSON)

	// ErrTooLarge: a payload, schema or workflow is over its size limit. [TOO_LARGE]
	ErrTooLarge error = coded.New("schema: too large", protocol.CodeTooLarge)

	// ErrAlreadyRegistered: a schema is already registered for the
	// payload_type. Payload types are versioned contracts: change the
	// version, not the schema. [CONFLICT]
	ErrAlreadyRegistered error = coded.New("schema: payload type already registered", protocol.CodeConflict)

	// ErrInvalidSchema: a schema is not valid JSON, not a JSON Schema that
	// gojsonschema compiles, has a $ref that does not resolve, or a Go type
	// cannot be reflected. The detail is a [*SchemaError]. [INVALID_FIELD]
	ErrInvalidSchema error = coded.New("schema: invalid schema", protocol.CodeInvalidField)

	// ErrUnsupportedKeyword: a schema uses a keyword gojsonschema would
	// silently ignore or that can crash it ($anchor, prefixItems, ...; see
	// the package doc). The detail is a [*SchemaError]. [INVALID_FIELD]
	ErrUnsupportedKeyword error = coded.New("schema: unsupported keyword", protocol.CodeInvalidField)

	// ErrRemoteRef: a schema has a $ref that is not a local fragment
	// ("#/..."). Remote references are never fetched. The detail is a
	// [*SchemaError]. [INVALID_FIELD]
	ErrRemoteRef error = coded.New("schema: remote $ref refused", protocol.CodeInvalidField)

	// ErrRefCycle: a schema's $ref and in-place applicators (allOf, anyOf,
	// oneOf, not, if/then/else, dependencies) form a loop that does not
	// descend into the instance, which would recurse without end during
	// validation. The detail is a [*SchemaError]. [INVALID_FIELD]
	ErrRefCycle error = coded.New("schema: $ref cycle", protocol.CodeInvalidField)

	// ErrInvalidWorkflow: a workflow document or value is malformed or
	// inconsistent with the registry (docs/protocol.md §3.4). The detail is a
	// [*WorkflowError]. [INVALID_FIELD]
	ErrInvalidWorkflow error = coded.New("schema: invalid workflow", protocol.CodeInvalidField)

	// ErrUnknownStep: a step id names no step of the workflow. [NOT_FOUND]
	ErrUnknownStep error = coded.New("schema: unknown workflow step", protocol.CodeNotFound)

	// ErrAlreadyBound: a run is already bound to a different workflow. [CONFLICT]
	ErrAlreadyBound error = coded.New("schema: run already bound to another workflow", protocol.CodeConflict)

	// ErrInvalidOptions: an [Options] field is out of range, or a required
	// argument is missing. [INVALID_FIELD]
	ErrInvalidOptions error = coded.New("schema: invalid options", protocol.CodeInvalidField)

	// ErrInternal: gojsonschema or invopop/jsonschema panicked; the panic
	// was recovered and turned into this error. [INTERNAL]
	ErrInternal error = coded.New("schema: internal error", protocol.CodeInternal)
)

// Violation is one way in which a document fails its schema or workflow
// step. Its JSON is {"path", "keyword", "message"}, as in the details of
// a wire error ([ValidationError.ErrorDetails]).
type Violation struct {
	// Path is a JSON pointer (RFC 6901) into the validated document: the
	// payload for [Registry.Validate] and [Schema.Validate]; the whole
	// message for [Registry.ValidateMessage], [Workflow.ValidateStep] and
	// [Binder.ValidateMessage], where payload violations start with "/payload".
	// For "required" and "additionalProperties" it points at the missing
	// or extra member ("/findings"), not at the object holding it.
	Path string `json:"path"`
	// Keyword is the JSON Schema keyword that failed ("required", "type",
	// "minItems", "additionalProperties", "format", ...), or for a workflow
	// step "expects.type", "expects.payload_type" or "expects.required".
	Keyword string `json:"keyword"`
	// Message is a human-readable explanation.
	Message string `json:"message"`
}

// String formats the violation as "<path>: <keyword>: <message>", with
// "(root)" for the empty path.
func (v Violation) String() string {
	p := v.Path
	if p == "" {
		p = "(root)"
	}
	return p + ": " + v.Keyword + ": " + v.Message
}

// ValidationError reports every violation found in one payload or message.
// It matches [ErrValidation] and [protocol.CodeValidation] with errors.Is,
// and carries the code VALIDATION for [protocol.CodeOf].
type ValidationError struct {
	PayloadType string      // the payload_type validated against ("" if the message had none)
	Workflow    string      // the workflow name, for a step validation
	Step        string      // the step id, for a step validation
	Violations  []Violation // at least one, sorted by path then keyword
}

// Error lists the payload type, the workflow step when there is one, and
// every violation.
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("schema: ")
	if e.Workflow != "" {
		b.WriteString("workflow " + strconv.Quote(e.Workflow) + ": ")
	}
	if e.Step != "" {
		b.WriteString("step " + strconv.Quote(e.Step) + ": ")
	}
	if e.PayloadType != "" {
		b.WriteString(e.PayloadType + ": ")
	}
	if n := len(e.Violations); n == 1 {
		b.WriteString("1 violation: ")
	} else {
		b.WriteString(strconv.Itoa(n) + " violations: ")
	}
	for i, v := range e.Violations {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	return b.String()
}

// ClutchCode returns [protocol.CodeValidation], for [protocol.CodeOf].
func (e *ValidationError) ClutchCode() protocol.Code { return protocol.CodeValidation }

// ErrorDetails returns what the error adds to the details of a wire error
// (docs/protocol.md §5.4): "violations", one {"path", "keyword",
// "message"} object per violation. A router puts it in the details of the
// task.error that refuses an invalid result.
func (e *ValidationError) ErrorDetails() map[string]any {
	vs := make([]any, len(e.Violations))
	for i, v := range e.Violations {
		vs[i] = map[string]any{"path": v.Path, "keyword": v.Keyword, "message": v.Message}
	}
	return map[string]any{"violations": vs}
}

// Is matches [ErrValidation] and [protocol.CodeValidation].
func (e *ValidationError) Is(target error) bool {
	return target == ErrValidation || target == protocol.CodeValidation
}

// SchemaError reports why a schema was refused at registration: the
// payload_type, where in the schema document the problem is (a JSON pointer,
// "" for the root), the keyword involved, and the sentinel ([ErrInvalidSchema],
// [ErrUnsupportedKeyword], [ErrRemoteRef] or [ErrRefCycle]) it unwraps to.
type SchemaError struct {
	PayloadType string
	Path        string // JSON pointer into the schema document
	Keyword     string // e.g. "prefixItems", "$ref"; "" when none applies
	Detail      string
	Err         error // the sentinel, possibly wrapping a cause
}

// Error names the payload type, the keyword and where it is in the schema.
func (e *SchemaError) Error() string {
	var b strings.Builder
	b.WriteString("schema: ")
	if e.PayloadType != "" {
		b.WriteString(e.PayloadType + ": ")
	}
	if e.Keyword != "" {
		b.WriteString("keyword " + strconv.Quote(e.Keyword) + " ")
	}
	p := e.Path
	if p == "" {
		p = "(root)"
	}
	b.WriteString("at " + p)
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	return b.String()
}

// Unwrap returns the sentinel (and through it, any cause).
func (e *SchemaError) Unwrap() error { return e.Err }

// ClutchCode returns the code of the sentinel, for [protocol.CodeOf].
func (e *SchemaError) ClutchCode() protocol.Code { return protocol.CodeOf(e.Err) }

// Problem is one defect of a workflow document.
type Problem struct {
	Line   int    // 1-based line in the document, 0 when not known (a workflow built in Go)
	Column int    // 1-based column, 0 when not known
	Field  string // e.g. "steps[1].expects.payload_type"; "" for the whole document
	Detail string
}

// String formats the problem as "line L:C: <field>: <detail>".
func (p Problem) String() string {
	var b strings.Builder
	switch {
	case p.Line > 0 && p.Column > 0:
		fmt.Fprintf(&b, "line %d:%d: ", p.Line, p.Column)
	case p.Line > 0:
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Detail)
	return b.String()
}

// WorkflowError lists every problem found in a workflow (docs/protocol.md §3.4). It
// matches [ErrInvalidWorkflow] with errors.Is.
type WorkflowError struct {
	Workflow string    // the workflow name, when it could be read
	Problems []Problem // at least one, in document order
}

// Error lists every problem of the workflow.
func (e *WorkflowError) Error() string {
	var b strings.Builder
	b.WriteString("schema: invalid workflow")
	if e.Workflow != "" {
		b.WriteString(" " + strconv.Quote(e.Workflow))
	}
	b.WriteString(": ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap returns [ErrInvalidWorkflow].
func (e *WorkflowError) Unwrap() error { return ErrInvalidWorkflow }

// ClutchCode returns [protocol.CodeInvalidField], for [protocol.CodeOf].
func (e *WorkflowError) ClutchCode() protocol.Code { return protocol.CodeInvalidField }

// unknownTypeError is [ErrUnknownPayloadType] for one payload type, said
// once: `schema: unknown payload type "research.query.v2"`.
type unknownTypeError struct{ payloadType string }

func (e *unknownTypeError) Error() string {
	return "schema: unknown payload type " + strconv.Quote(e.payloadType)
}

// Unwrap returns [ErrUnknownPayloadType], which carries the code.
func (e *unknownTypeError) Unwrap() error { return ErrUnknownPayloadType }

// errorf wraps a sentinel with a formatted detail:
// "schema: <sentinel>: <detail>".
func errorf(s error, format string, args ...any) error {
	return coded.Wrap(s, fmt.Sprintf(format, args...), nil)
}

// wrapCause wraps a sentinel with a formatted detail and an underlying
// cause: "schema: <sentinel>: <detail>: <cause>".
func wrapCause(s error, cause error, format string, args ...any) error {
	return coded.Wrap(s, fmt.Sprintf(format, args...), cause)
}
