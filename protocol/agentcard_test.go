package protocol

import (
	"errors"
	"testing"
)

func TestDecodeAgentCardErrors(t *testing.T) {
	const ok = `{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[{"id":"skill:x"}]`
	cases := []struct {
		name, in string
		code     Code
		path     string
	}{
		{"not JSON", `{"v":`, CodeInvalidJSON, "/v"},
		{"array", `[]`, CodeWrongType, ""},
		{"duplicate", ok + `,"agent_id":"agent:b"}`, CodeDuplicateKey, "/agent_id"},
		{"invalid utf8", ok + ",\"display\":{\"name\":\"\xff\"}}", CodeInvalidUTF8, "/display/name"},
		{"unknown nested field", `{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[{"id":"skill:x","tag":["t"]}]}`, CodeUnknownField, "/capabilities/0/tag"},
		{"wrong type", `{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[],"limits":{"max_concurrency":"2"}}`, CodeWrongType, "/limits/max_concurrency"},
		{"missing capabilities", `{"v":"clutch/0.1","agent_id":"agent:a"}`, CodeMissingField, "/capabilities"},
		{"missing agent_id", `{"v":"clutch/0.1","capabilities":[]}`, CodeMissingField, "/agent_id"},
		{"version", `{"v":"clutch/0.2","agent_id":"agent:a","capabilities":[]}`, CodeUnsupportedVersion, "/v"},
		{"agent prefix", `{"v":"clutch/0.1","agent_id":"ken","capabilities":[]}`, CodeInvalidField, "/agent_id"},
		{"capability id", `{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[{"id":"research"}]}`, CodeInvalidField, "/capabilities/0/id"},
		{"trust level", `{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[{"id":"skill:x","trust_level":"root"}]}`, CodeInvalidField, "/capabilities/0/trust_level"},
		{"cost hint", `{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[{"id":"skill:x","cost_hint":"free"}]}`, CodeInvalidField, "/capabilities/0/cost_hint"},
		{"tool form", `{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[{"id":"tool:mcp","servers":["browser"]}]}`, CodeInvalidField, "/capabilities/0/servers/0"},
		{"negative limit", `{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[],"limits":{"max_runtime_sec":-1}}`, CodeInvalidField, "/limits"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeAgentCard([]byte(tc.in))
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != tc.code || pe.Path != tc.path {
				t.Fatalf("err = %v, want %s at %s", err, tc.code, tc.path)
			}
		})
	}
	if _, err := (Decoder{MaxBytes: 10}).DecodeAgentCard([]byte(ok + "}")); !errors.Is(err, CodeTooLarge) {
		t.Fatalf("limit: %v", err)
	}
}

func TestAgentCardHelpers(t *testing.T) {
	c, err := DecodeAgentCard(readTestdata(t, "examples/02-agentcard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Tools(); len(got) != 2 || got[0] != "mcp:browser" || got[1] != "mcp:files" {
		t.Fatalf("Tools = %v", got)
	}
	if got := c.Tags(); len(got) != 3 {
		t.Fatalf("Tags = %v", got)
	}
	if _, ok := c.Capability("skill:nope"); ok {
		t.Fatal("found a capability that is not there")
	}
}
