package protocol

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
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
		{"key alg", `{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[],"security":{"keys":[{"kid":"k1","alg":"rsa","public_key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"}]}}`, CodeInvalidField, "/security/keys/0/alg"},
		{"key bytes", `{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[],"security":{"keys":[{"kid":"k1","alg":"ed25519","public_key":"AAEC"}]}}`, CodeInvalidField, "/security/keys/0/public_key"},
		{"key padding", `{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[],"security":{"keys":[{"kid":"k1","alg":"ed25519","public_key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}]}}`, CodeInvalidField, "/security/keys/0/public_key"},
		{"key kid empty", `{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[],"security":{"keys":[{"kid":"","alg":"ed25519","public_key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"}]}}`, CodeInvalidField, "/security/keys/0/kid"},
		{"key kid twice", `{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[],"security":{"keys":[{"kid":"k1","alg":"ed25519","public_key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"},{"kid":"k1","alg":"ed25519","public_key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"}]}}`, CodeInvalidField, "/security/keys/1/kid"},
		{"key unknown member", `{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[],"security":{"keys":[{"kid":"k1","alg":"ed25519","public_key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8","use":"sig"}]}}`, CodeUnknownField, "/security/keys/0/use"},
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

func TestCardKeys(t *testing.T) {
	pub := goldenKey().Public().(ed25519.PublicKey)
	c := &AgentCard{V: Version, AgentID: "agent:a", Capabilities: []Capability{},
		Security: &CardSecurity{Keys: []CardKey{NewCardKey("k1", pub)}}}
	b, err := EncodeAgentCard(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `"security":{"keys":[{"kid":"k1","alg":"ed25519","public_key":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}]}`
	if !strings.Contains(string(b), want) {
		t.Fatalf("encoded card %s lacks %s", b, want)
	}
	d, err := DecodeAgentCard(b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Security.Keys[0].Ed25519()
	if err != nil || !got.Equal(pub) {
		t.Fatalf("key = %x, %v", got, err)
	}
}
