package protocol

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// cmpMessage compares messages by their fields, not their remembered bytes.
var cmpMessage = cmp.Options{cmpopts.IgnoreUnexported(Message{}), cmpopts.EquateEmpty()}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGoldenEnvelope: the full §1.1 example decodes, validates, keeps its
// exact bytes and round-trips to an equal value.
func TestGoldenEnvelope(t *testing.T) {
	data := readTestdata(t, "examples/01-clutchmessage-task.result.json")
	m, err := Decode(data)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if !bytes.Equal(m.Raw(), data) {
		t.Fatal("Raw() differs from the input bytes")
	}
	want := &Message{
		V: "clutch/0.1", ID: "msg_01HX...", TS: "2026-02-01T13:20:11.123Z",
		ThreadID: "thr_01HX...", RunID: "run_01HX...", TaskID: "task_01HX...",
		Trace:       &Trace{TraceID: "tr_...", SpanID: "sp_..."},
		From:        Participant{AgentID: "agent:ken", Role: "worker"},
		To:          []Participant{{AgentID: "agent:orchestrator"}},
		Type:        TypeTaskResult,
		Domain:      "research",
		PayloadType: "research.summary.v1",
		SchemaRef:   "schema://clutch/research/summary@1",
		Requires:    []string{"skill:research"},
		Prefers:     []string{"tool:browser", "domain:fintech"},
		Security: &Security{
			Auth:   &Auth{Scheme: "ed25519", Kid: "key_01", Sig: "..."},
			Policy: &Policy{Sandbox: true, ToolAllowlist: []string{"mcp:browser", "mcp:files"}},
		},
		Attachments:    []Attachment{{Kind: "artifact_ref", Ref: "artifact:report_456"}},
		IdempotencyKey: "idem_01HX...",
		Attempt:        1,
		Meta:           map[string]any{"framework": "langgraph", "ui_channel": "chat:research"},
	}
	if diff := cmp.Diff(want, m, cmpMessage, cmpopts.IgnoreFields(Message{}, "Payload")); diff != "" {
		t.Fatalf("decoded message (-want +got):\n%s", diff)
	}
	type summary struct {
		Title     string   `json:"title"`
		Findings  []string `json:"findings"`
		Citations []string `json:"citations"`
	}
	p, err := DecodePayload[summary](m)
	if err != nil {
		t.Fatal(err)
	}
	if p.Title != "Market analysis complete" || len(p.Findings) != 1 || len(p.Citations) != 1 {
		t.Fatalf("payload = %+v", p)
	}
	assertRoundTrip(t, m)
}

// assertRoundTrip re-encodes m from its fields and decodes it again.
func assertRoundTrip(t *testing.T, m *Message) {
	t.Helper()
	c := m.Clone()
	c.Reset()
	b, err := appendMessage(nil, c)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	m2, err := Decode(b)
	if err != nil {
		t.Fatalf("decode of re-encoded %s: %v", b, err)
	}
	if diff := cmp.Diff(m, m2, cmpMessage, cmp.Comparer(jsonEqual)); diff != "" {
		t.Fatalf("round trip (-first +second):\n%s", diff)
	}
}

// TestGoldenAgentCard: the §1.4 example decodes, validates and round-trips.
func TestGoldenAgentCard(t *testing.T) {
	data := readTestdata(t, "examples/02-agentcard.json")
	c, err := DecodeAgentCard(data)
	if err != nil {
		t.Fatal(err)
	}
	if c.AgentID != "agent:ken" || len(c.Capabilities) != 2 || c.Limits.MaxConcurrency != 2 ||
		c.Limits.MaxRuntimeSec != 600 || c.Endpoints["a2a"].URL != "http://ken:8080/a2a" ||
		!c.Security.Sandbox || c.Security.Network != "egress-restricted" {
		t.Fatalf("card = %+v", c)
	}
	if got := c.Capabilities[1].Servers; !cmp.Equal(got, []string{"mcp:browser", "mcp:files"}) {
		t.Fatalf("servers = %v", got)
	}
	b, err := EncodeAgentCard(c)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := DecodeAgentCard(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, c2); diff != "" {
		t.Fatalf("round trip (-first +second):\n%s", diff)
	}
}

// TestGoldenPartials: the §4.3 and §5.4 snippets are not whole envelopes, so
// Decode must refuse them with MISSING_FIELD; their payloads are the wire
// shapes of RoutingDecision and ErrorPayload and decode strictly into them.
func TestGoldenPartials(t *testing.T) {
	for _, tc := range []struct {
		file     string
		typ      Type
		firstGap string
	}{
		{"examples/03-routing.decision-partial.json", TypeRoutingDecision, "/v"},
		{"examples/04-task.error-partial.json", TypeTaskError, "/v"},
	} {
		data := readTestdata(t, tc.file)
		_, err := Decode(data)
		var pe *Error
		if !errors.As(err, &pe) || pe.Code != CodeMissingField || pe.Path != tc.firstGap {
			t.Fatalf("%s: Decode error = %v, want MISSING_FIELD at %s", tc.file, err, tc.firstGap)
		}
		// Complete the envelope around the snippet's payload.
		m := NewMessage(tc.typ, "agent:orchestrator")
		raw := extractMember(t, data, "payload")
		if err := m.SetPayload(raw); err != nil {
			t.Fatal(err)
		}
		if _, err := Encode(m); err != nil {
			t.Fatal(err)
		}
		switch tc.typ {
		case TypeRoutingDecision:
			d, err := DecodePayload[RoutingDecision](m)
			if err != nil {
				t.Fatal(err)
			}
			if d.Selected != "agent:ken" || len(d.Candidates) != 2 || d.Scores["agent:research-2"] != 0.85 {
				t.Fatalf("decision = %+v", d)
			}
		case TypeTaskError:
			p, err := DecodePayload[ErrorPayload](m)
			if err != nil {
				t.Fatal(err)
			}
			if p.Code != CodeToolUnavailable || !p.Retryable || p.Details["tool"] != "mcp:browser" {
				t.Fatalf("error payload = %+v", p)
			}
			if !errors.Is(&p, CodeToolUnavailable) {
				t.Fatalf("error payload does not match its code")
			}
		}
		assertRoundTrip(t, m)
	}
}
