package protocol_test

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
)

type summary struct {
	Title     string   `json:"title"`
	Findings  []string `json:"findings"`
	Citations []string `json:"citations"`
}

func ExampleEncode() {
	ids := protocol.NewIDs(&protocol.IDOptions{
		Clock:   func() time.Time { return time.Date(2026, 2, 1, 13, 20, 11, 123e6, time.UTC) },
		Entropy: rand.NewChaCha8([32]byte{}),
	})
	m := ids.NewMessage(protocol.TypeTaskResult, "agent:ken")
	m.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
	m.Domain = "research"
	m.PayloadType = "research.summary.v1"
	m.SchemaRef = protocol.SchemaRefFor(m.PayloadType)
	if err := m.SetPayload(summary{Title: "Done", Findings: []string{"a"}, Citations: []string{"https://example.com"}}); err != nil {
		panic(err)
	}
	raw, err := protocol.Encode(m)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(raw) > 0, m.SchemaRef, m.TS)
	// Output: true schema://clutch/research/summary@1 2026-02-01T13:20:11.123Z
}

func ExampleDecode() {
	raw := []byte(`{"v":"clutch/0.1","id":"msg_1","ts":"2026-02-01T13:20:11.123Z",
	  "thread_id":"thr_1","run_id":"run_1","task_id":"task_1",
	  "from":{"agent_id":"agent:ken"},"to":[{"agent_id":"agent:orchestrator"}],
	  "type":"task.result","payload_type":"research.summary.v1",
	  "payload":{"title":"Done","findings":["a"],"citations":["https://example.com"]}}`)
	m, err := protocol.Decode(raw)
	if err != nil {
		panic(err)
	}
	if err := m.Validate(); err != nil {
		panic(err)
	}
	s, err := protocol.DecodePayload[summary](m)
	if err != nil {
		panic(err)
	}
	fmt.Println(m.Type, m.From.AgentID, s.Title, s.Findings)
	// Output: task.result agent:ken Done [a]
}

func ExampleDecode_errors() {
	_, err := protocol.Decode([]byte(`{"v":"clutch/0.1","id":"a","id":"b"}`))
	var pe *protocol.Error
	if errors.As(err, &pe) {
		fmt.Println(pe.Code, pe.Path, pe.Code.Retryable())
	}
	fmt.Println(errors.Is(err, protocol.CodeDuplicateKey))
	// Output:
	// DUPLICATE_KEY /id false
	// true
}

func ExampleSign() {
	seed := make([]byte, ed25519.SeedSize) // a fixed key, for the example only
	priv := ed25519.NewKeyFromSeed(seed)
	keys := protocol.StaticKeys{"key_01": priv.Public().(ed25519.PublicKey)}

	m := protocol.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	if err := m.SetPayload(map[string]string{"query": "Nordic payments"}); err != nil {
		panic(err)
	}
	if err := protocol.Sign(m, "key_01", priv); err != nil {
		panic(err)
	}
	fmt.Println(protocol.Verify(m.Raw(), keys))

	tampered := []byte(string(m.Raw()[:len(m.Raw())-1]) + `,"x_injected":true}`)
	fmt.Println(errors.Is(protocol.Verify(tampered, keys), protocol.CodeBadSignature))
	// Output:
	// <nil>
	// true
}

func ExampleDecodeAgentCard() {
	card, err := protocol.DecodeAgentCard([]byte(`{"v":"clutch/0.1","agent_id":"agent:ken",
	  "capabilities":[{"id":"skill:research","tags":["market","fintech"],"tools":["mcp:browser"],"trust_level":"sandbox"}],
	  "limits":{"max_concurrency":2,"max_runtime_sec":600}}`))
	if err != nil {
		panic(err)
	}
	c, _ := card.Capability("skill:research")
	fmt.Println(card.AgentID, c.Tags, card.Tools(), card.Limits.MaxConcurrency)
	// Output: agent:ken [market fintech] [mcp:browser] 2
}

// Ids from one source sort by creation time; a fixed Clock and a seeded
// Entropy give the same ids on every run.
func ExampleNewIDs() {
	ids := protocol.NewIDs(&protocol.IDOptions{
		Clock:   func() time.Time { return time.Date(2026, 2, 1, 13, 20, 11, 123e6, time.UTC) },
		Entropy: rand.NewChaCha8([32]byte{}),
	})
	a, b := ids.TaskID(), ids.TaskID()
	fmt.Println(a)
	fmt.Println(b)
	fmt.Println(a < b)
	// Output:
	// task_01KGCNRRVKV63QXKKD6T5AR6KF
	// task_01KGCNRRVKV63QXKKD6TS75E5H
	// true
}

// A card lists the public keys its agent signs with; a verifier resolves
// the kid of a message to one of them.
func ExampleNewCardKey() {
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:ken", Capabilities: []protocol.Capability{},
		Security: &protocol.CardSecurity{Keys: []protocol.CardKey{protocol.NewCardKey("ken-1", priv.Public().(ed25519.PublicKey))}}}
	b, err := protocol.EncodeAgentCard(card)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))
	// Output:
	// {"v":"clutch/0.1","agent_id":"agent:ken","capabilities":[],"security":{"keys":[{"kid":"ken-1","alg":"ed25519","public_key":"O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik"}]}}
}

// Canonical gives the RFC 8785 form a signature covers.
func ExampleCanonical() {
	c, err := protocol.Canonical([]byte(`{"b": [1.0, 1e21, 0.000001], "a": "\u00e9\n"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(c))
	// Output:
	// {"a":"é\n","b":[1,1e+21,0.000001]}
}
