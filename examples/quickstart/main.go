// Command quickstart is the first tutorial: it builds the task.request of
// seed 000 §10 (a UI asking the orchestrator for market research), signs it
// with Ed25519, encodes it, decodes and verifies it as a receiver would, and
// prints it. It needs no services and no keys: the signing key is made on the
// spot.
//
//	go run ./examples/quickstart
package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/clutchprotocol/clutch/protocol"
)

// Query is the research.query.v1 payload the UI sends (seed 000 §10, step 1).
type Query struct {
	Topic      string   `json:"topic"`
	Questions  []string `json:"questions"`
	MaxSources int      `json:"max_sources"`
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	// 1. UI → Gateway: a task.request for the orchestrator.
	m := protocol.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	m.From.Role = "user"
	m.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
	m.Domain = "research"
	m.PayloadType = "research.query.v1"
	m.SchemaRef = protocol.SchemaRefFor(m.PayloadType)
	m.Requires = []string{"skill:research"}
	m.Prefers = []string{"tool:browser", "domain:fintech"}
	m.Security = &protocol.Security{Policy: &protocol.Policy{Sandbox: true, ToolAllowlist: []string{"mcp:browser"}}}
	m.IdempotencyKey = "idem_" + m.ID[len(protocol.IDPrefixMessage):]
	m.Meta = map[string]any{"ui_channel": "chat:research"}
	if err := m.SetPayload(Query{
		Topic:      "Nordic payments market",
		Questions:  []string{"Who are the incumbents?", "How fast is real-time rails adoption?"},
		MaxSources: 5,
	}); err != nil {
		return err
	}

	// 2. Sign it (seed 000 §6): Ed25519 over the JCS bytes without the sig.
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return err
	}
	if err := protocol.Sign(m, "key_ui_01", priv); err != nil {
		return err
	}
	wire, err := protocol.Encode(m) // the signed bytes, encoded once
	if err != nil {
		return err
	}

	// 3. The receiver: verify the bytes as received, then decode strictly.
	if err := protocol.Verify(wire, protocol.StaticKeys{"key_ui_01": pub}); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	in, err := protocol.Decode(wire)
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if err := in.Validate(); err != nil {
		return err
	}
	q, err := protocol.DecodePayload[Query](in)
	if err != nil {
		return err
	}

	var pretty bytes.Buffer
	if err := json.Indent(&pretty, in.Raw(), "", "  "); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s\n\n", pretty.Bytes())
	fmt.Fprintf(w, "verified %s from %s: %d bytes on the wire, signed with key %s\n",
		in.Type, in.From.AgentID, len(wire), in.Security.Auth.Kid)
	fmt.Fprintf(w, "payload %s asks about %q (%d questions)\n", in.PayloadType, q.Topic, len(q.Questions))

	// 4. Tampering is caught: change one byte of the payload.
	tampered := bytes.Replace(wire, []byte("Nordic"), []byte("Baltic"), 1)
	err = protocol.Verify(tampered, protocol.StaticKeys{"key_ui_01": pub})
	fmt.Fprintf(w, "tampered copy: %v\n", err)
	if err == nil {
		return fmt.Errorf("a tampered message verified")
	}
	return nil
}
