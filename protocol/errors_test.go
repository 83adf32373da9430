package protocol

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestErrorTable: every code has a summary and a default retryability,
// Codes returns a fresh slice, and a code outside the table is not known.
// The CLowl and HTTP mappings are tested with their tables (adapters/clowl,
// internal/httpjson).
func TestErrorTable(t *testing.T) {
	for _, c := range Codes() {
		if !c.Known() || c.Summary() == "" {
			t.Errorf("%s has no summary", c)
		}
	}
	if !CodeToolUnavailable.Retryable() || CodePolicyDenied.Retryable() {
		t.Error("retryability")
	}
	if Code("NOPE").Known() || Code("NOPE").Retryable() {
		t.Error("unknown code")
	}
	cs := Codes()
	cs[0] = "CHANGED"
	if Codes()[0] == "CHANGED" || len(Codes()) != len(codes) {
		t.Error("Codes shares its slice")
	}
}

// TestErrorTableMatchesDocs: the code table of docs/protocol.md §5.4 lists
// exactly the codes of the package, with their retryability.
func TestErrorTableMatchesDocs(t *testing.T) {
	b, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "| code | CLowl | HTTP | retryable | meaning |")
	if i < 0 {
		t.Fatal("docs/protocol.md has no code table")
	}
	seen := map[Code]bool{}
	for _, line := range strings.Split(s[i:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cols := strings.Split(strings.Trim(line, "|"), "|")
		if len(cols) != 5 || !strings.HasPrefix(strings.TrimSpace(cols[0]), "`") {
			continue // a group heading
		}
		c := Code(strings.Trim(strings.TrimSpace(cols[0]), "`"))
		seen[c] = true
		if !c.Known() {
			t.Errorf("docs/protocol.md lists %s, which the package does not define", c)
		}
		if want := strings.TrimSpace(cols[3]) == "yes"; c.Retryable() != want {
			t.Errorf("%s.Retryable() = %v, docs/protocol.md says %s", c, c.Retryable(), strings.TrimSpace(cols[3]))
		}
	}
	for _, c := range Codes() {
		if !seen[c] {
			t.Errorf("%s is not in the table of docs/protocol.md §5.4", c)
		}
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
