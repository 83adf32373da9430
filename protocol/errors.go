package protocol

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// Code is a stable, machine-readable error code. The same codes appear in Go
// errors (as [*Error].Code), on the wire (the "code" of an [ErrorPayload], docs/protocol.md
// §5.4) and in the documentation; they never change meaning once released.
//
// A Code is itself an error so that callers can match any error of the module
// by code with errors.Is:
//
//	if errors.Is(err, protocol.CodeDuplicateKey) { ... }
type Code string

// The error table: every code the module produces, each with a default
// retryability ([Code.Retryable]) and a description ([Code.Summary]). The
// table of docs/protocol.md §5.4 also gives each code a CLowl v0.2 code and
// an HTTP status; those mappings live with the packages that speak CLowl and
// HTTP, so this package links neither.
const (
	// Decoding and validation of the envelope.

	CodeInvalidJSON        Code = "INVALID_JSON"        // not well-formed JSON
	CodeInvalidUTF8        Code = "INVALID_UTF8"        // a string is not valid UTF-8 / UTF-16
	CodeDuplicateKey       Code = "DUPLICATE_KEY"       // an object has the same key twice
	CodeWrongType          Code = "WRONG_TYPE"          // a field has the wrong JSON type
	CodeMissingField       Code = "MISSING_FIELD"       // a required field is absent
	CodeUnknownField       Code = "UNKNOWN_FIELD"       // a field the protocol object does not define
	CodeUnknownType        Code = "UNKNOWN_TYPE"        // "type" is neither one of §2 nor x.<vendor>.<name>
	CodeUnsupportedVersion Code = "UNSUPPORTED_VERSION" // "v" is not clutch/0.1
	CodeTooLarge           Code = "TOO_LARGE"           // input or result over a size limit
	CodeTooDeep            Code = "TOO_DEEP"            // JSON nested deeper than the limit
	CodeInvalidField       Code = "INVALID_FIELD"       // a field breaks a semantic rule (Validate)

	// Authentication (§6).

	CodeBadSignature Code = "BAD_SIGNATURE" // missing, malformed or wrong signature
	CodeUnknownKey   Code = "UNKNOWN_KEY"   // the signing key id cannot be resolved

	// Tasks, tools and routing (§2, §4, §5.4).

	CodeValidation         Code = "VALIDATION"          // a payload failed its schema (§3)
	CodeToolUnavailable    Code = "TOOL_UNAVAILABLE"    // a tool server is unreachable or crashed
	CodeToolNotFound       Code = "TOOL_NOT_FOUND"      // the server has no such tool
	CodeToolFailed         Code = "TOOL_FAILED"         // the tool ran and reported an error
	CodeTimeout            Code = "TIMEOUT"             // a deadline passed
	CodeCancelled          Code = "CANCELLED"           // cancelled on purpose
	CodePolicyDenied       Code = "POLICY_DENIED"       // a security policy or allowlist refused it
	CodeNoMatch            Code = "NO_MATCH"            // no agent matched the requirements (routing.failure)
	CodeCapacity           Code = "CAPACITY"            // an agent or queue is at capacity
	CodeRateLimited        Code = "RATE_LIMITED"        // the peer asked us to slow down
	CodeBudget             Code = "BUDGET"              // a run budget (tasks, depth, cost) is exhausted
	CodeCycle              Code = "CYCLE"               // a delegation would re-enter its ancestor chain
	CodeContextUnavailable Code = "CONTEXT_UNAVAILABLE" // a referenced context or artifact cannot be read
	CodeDependency         Code = "DEPENDENCY"          // a required upstream result is missing
	CodeUnsupportedTask    Code = "UNSUPPORTED_TASK"    // the agent does not support this kind of task
	CodeConflict           Code = "CONFLICT"            // a conflicting concurrent operation
	CodeUnauthorized       Code = "UNAUTHORIZED"        // the sender is not authorised
	CodeNotFound           Code = "NOT_FOUND"           // the addressed agent, task or object does not exist
	CodeInternal           Code = "INTERNAL"            // an unexpected failure (a bug, a panic)
	CodeInterrupted        Code = "INTERRUPTED"         // the process running the task stopped before it ended
	CodeInputRequired      Code = "INPUT_REQUIRED"      // the agent needs more input from the requester to go on
)

type codeInfo struct {
	retryable bool
	summary   string
}

// codes is the one table behind Code's methods and [Codes]. Retryability
// follows the CLowl v0.2 error catalog (docs/protocol.md §14.6) where its
// code says it, else the nature of the failure.
var codes = map[Code]codeInfo{
	CodeInvalidJSON:        {false, "the input is not well-formed JSON"},
	CodeInvalidUTF8:        {false, "a string is not valid UTF-8"},
	CodeDuplicateKey:       {false, "an object holds the same key twice"},
	CodeWrongType:          {false, "a field has the wrong JSON type"},
	CodeMissingField:       {false, "a required field is missing"},
	CodeUnknownField:       {false, "a field is not defined by the protocol"},
	CodeUnknownType:        {false, "the message type is not known"},
	CodeUnsupportedVersion: {false, "the protocol version is not supported"},
	CodeTooLarge:           {false, "over a size limit"},
	CodeTooDeep:            {false, "JSON nested too deeply"},
	CodeInvalidField:       {false, "a field breaks a protocol rule"},
	CodeBadSignature:       {false, "the signature is missing or wrong"},
	CodeUnknownKey:         {false, "the signing key is not known"},
	CodeValidation:         {false, "a payload does not match its schema"},
	CodeToolUnavailable:    {true, "a tool server is unavailable"},
	CodeToolNotFound:       {false, "the tool does not exist"},
	CodeToolFailed:         {false, "the tool reported an error"},
	CodeTimeout:            {true, "a deadline passed"},
	CodeCancelled:          {false, "the work was cancelled"},
	CodePolicyDenied:       {false, "a security policy refused it"},
	CodeNoMatch:            {false, "no agent matched the requirements"},
	CodeCapacity:           {true, "at capacity"},
	CodeRateLimited:        {true, "rate limited"},
	CodeBudget:             {false, "a budget is exhausted"},
	CodeCycle:              {false, "a delegation cycle"},
	CodeContextUnavailable: {true, "a referenced context is unavailable"},
	CodeDependency:         {true, "a required upstream result is missing"},
	CodeUnsupportedTask:    {false, "the task type is not supported"},
	CodeConflict:           {true, "a conflicting concurrent operation"},
	CodeUnauthorized:       {false, "the sender is not authorised"},
	CodeNotFound:           {false, "not found"},
	CodeInternal:           {true, "an internal error"},
	CodeInterrupted:        {true, "the task was interrupted by a restart"},
	CodeInputRequired:      {false, "the agent needs more input"},
}

// Error makes a Code usable as an error target for errors.Is.
func (c Code) Error() string { return string(c) }

// Known reports whether c is in the error table.
func (c Code) Known() bool { _, ok := codes[c]; return ok }

// Retryable reports whether a failure with this code is worth retrying by
// default (docs/protocol.md §5.3). An [ErrorPayload] may override it.
func (c Code) Retryable() bool { return codes[c].retryable }

// Summary is a short English description of the code.
func (c Code) Summary() string { return codes[c].summary }

// Codes returns every code of the table, sorted, in a fresh slice the
// caller may keep and change. Packages that map codes to another vocabulary
// (HTTP statuses, CLowl codes) test their tables against it.
func Codes() []Code {
	out := make([]Code, 0, len(codes))
	for c := range codes {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Error is the typed error of the protocol package. It names what was wrong:
// the stable Code, the JSON pointer (RFC 6901) of the offending field when
// there is one, and the byte offset in the input where decoding stopped.
type Error struct {
	Code   Code   // stable code from the error table
	Path   string // JSON pointer of the field, "" for the whole document
	Offset int64  // byte offset in the input, -1 when not known
	Detail string // human-readable explanation
	Err    error  // underlying cause, if any
}

// Error returns the code, then the path, offset, detail and cause when
// known, e.g. DUPLICATE_KEY at /id (offset 42): duplicate key "id".
func (e *Error) Error() string {
	s := string(e.Code)
	if e.Path != "" {
		s += " at " + e.Path
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf(" (offset %d)", e.Offset)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports a match with a [Code] target, so errors.Is(err, CodeTooLarge)
// works through any wrapping.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == e.Code
}

// CodeOf returns the Code carried by err: the Code of an [*Error] or a
// [Code] in its chain, or of any error with a `ClutchCode() Code` method, so
// other packages' typed errors can take part. It returns "" for nil and
// CodeInternal for an error that carries no code.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	var coded interface{ ClutchCode() Code }
	if errors.As(err, &coded) {
		return coded.ClutchCode()
	}
	var c Code
	if errors.As(err, &c) {
		return c
	}
	return CodeInternal
}

// newError and invalid build the package's errors. protocol cannot use
// internal/coded (coded builds on Code), and needs no sentinels: every
// error it returns is an *Error, matched by its Code.
func newError(code Code, path string, off int, format string, args ...any) *Error {
	d := format
	if len(args) > 0 {
		d = fmt.Sprintf(format, args...)
	}
	return &Error{Code: code, Path: path, Offset: int64(off), Detail: d}
}

// invalid is an error at path with no byte offset.
func invalid(c Code, path, detail string) *Error {
	return &Error{Code: c, Path: path, Offset: -1, Detail: detail}
}

// ErrorPayload is the wire form of an error (docs/protocol.md §5.4), the payload of
// task.error, tool.error and routing.failure messages:
//
//	{"code": "TOOL_UNAVAILABLE", "message": "...", "retryable": true, "details": {...}}
type ErrorPayload struct {
	Code      Code           `json:"code"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	Details   map[string]any `json:"details,omitempty"`
}

// NewErrorPayload builds the wire error for err: an [*ErrorPayload] in its
// chain as it is (a peer's or a handler's own wire error); else its Code
// (see [CodeOf]; a context deadline is TIMEOUT and a cancellation
// CANCELLED), its message and the code's default retryability.
func NewErrorPayload(err error) ErrorPayload {
	var ep *ErrorPayload
	if errors.As(err, &ep) {
		c := *ep
		if c.Code == "" {
			c.Code = CodeInternal
		}
		return c
	}
	c := CodeOf(err)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		c = CodeTimeout
	case errors.Is(err, context.Canceled):
		c = CodeCancelled
	}
	return ErrorPayload{Code: c, Message: err.Error(), Retryable: c.Retryable()}
}

// Error lets an ErrorPayload received from a peer travel as a Go error; its
// Code is matched by errors.Is like any other.
func (p *ErrorPayload) Error() string { return string(p.Code) + ": " + p.Message }

// ClutchCode returns p.Code, for [CodeOf].
func (p *ErrorPayload) ClutchCode() Code { return p.Code }

// Is matches a [Code] target.
func (p *ErrorPayload) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == p.Code
}
