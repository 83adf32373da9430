package protocol

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
)

// TestErrorTable: every code maps to a CLowl code of the catalog (E001–E016)
// and an HTTP error status, and the CLowl mapping round-trips where the
// catalog has a single meaning.
func TestErrorTable(t *testing.T) {
	clowl := regexp.MustCompile(`^E0(0[1-9]|1[0-6])$`)
	for _, c := range Codes() {
		if !clowl.MatchString(c.CLowl()) {
			t.Errorf("%s maps to %q", c, c.CLowl())
		}
		if s := c.HTTPStatus(); s < 400 || s > 599 {
			t.Errorf("%s maps to HTTP %d", c, s)
		}
		if c.Summary() == "" {
			t.Errorf("%s has no summary", c)
		}
	}
	for _, c := range []Code{CodeTimeout, CodeCancelled, CodeBudget, CodeCycle, CodePolicyDenied, CodeNoMatch, CodeContextUnavailable, CodeUnsupportedVersion} {
		if back := CodeFromCLowl(c.CLowl()); back != c {
			t.Errorf("%s → %s → %s", c, c.CLowl(), back)
		}
	}
	if CodeFromCLowl("E999") != CodeInternal {
		t.Error("unknown CLowl code")
	}
	if !CodeToolUnavailable.Retryable() || CodePolicyDenied.Retryable() {
		t.Error("retryability")
	}
	if Code("NOPE").Known() || Code("NOPE").HTTPStatus() != 500 {
		t.Error("unknown code")
	}
}

func TestCodeOf(t *testing.T) {
	pe := &Error{Code: CodeTimeout, Path: "/x", Offset: -1}
	wrapped := fmt.Errorf("calling tool: %w", pe)
	if CodeOf(wrapped) != CodeTimeout || !errors.Is(wrapped, CodeTimeout) || errors.Is(wrapped, CodeCancelled) {
		t.Fatal("wrapped *Error")
	}
	if CodeOf(nil) != "" || CodeOf(errors.New("x")) != CodeInternal {
		t.Fatal("nil / plain error")
	}
	if CodeOf(fmt.Errorf("x: %w", CodeBudget)) != CodeBudget {
		t.Fatal("bare Code")
	}
	p := NewErrorPayload(wrapped)
	if p.Code != CodeTimeout || !p.Retryable || p.Message == "" {
		t.Fatalf("payload %+v", p)
	}
	if CodeOf(&p) != CodeTimeout || !errors.Is(&p, CodeTimeout) {
		t.Fatal("ErrorPayload as error")
	}
	if got := pe.Error(); got != "TIMEOUT at /x" {
		t.Fatalf("Error() = %q", got)
	}
}

func TestNewErrorPayloadKeepsWireErrors(t *testing.T) {
	wire := &ErrorPayload{Code: CodeToolUnavailable, Message: "down", Retryable: false, Details: map[string]any{"tool": "mcp:x"}}
	p := NewErrorPayload(fmt.Errorf("calling: %w", wire))
	if p.Code != CodeToolUnavailable || p.Retryable || p.Message != "down" || p.Details["tool"] != "mcp:x" {
		t.Fatalf("wire error changed: %+v", p)
	}
	if p := NewErrorPayload(fmt.Errorf("x: %w", context.DeadlineExceeded)); p.Code != CodeTimeout || !p.Retryable {
		t.Fatalf("deadline: %+v", p)
	}
	if p := NewErrorPayload(context.Canceled); p.Code != CodeCancelled {
		t.Fatalf("cancel: %+v", p)
	}
}
