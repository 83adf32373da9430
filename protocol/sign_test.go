package protocol

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// TestCanonicalRFC8785 proves the canonicalization with the RFC 8785 author's
// vectors (testdata/jcs, Apache-2.0, see SOURCE.txt).
func TestCanonicalRFC8785(t *testing.T) {
	inputs, err := filepath.Glob("testdata/jcs/input/*.json")
	if err != nil || len(inputs) != 6 {
		t.Fatalf("want 6 JCS vectors, got %d (%v)", len(inputs), err)
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			got, err := Canonical(readTestdata(t, "jcs/input/"+name))
			if err != nil {
				t.Fatal(err)
			}
			want := readTestdata(t, "jcs/output/"+name)
			if !bytes.Equal(got, want) {
				t.Fatalf("canonical form differs\n got %s\nwant %s", got, want)
			}
		})
	}
}

// goldenKey is the fixed test key of the signed golden messages: the
// Ed25519 seed 00 01 02 ... 1f. Never use it for anything real.
func goldenKey() ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

// goldenMessages are the messages behind testdata/signed. They are built
// from fixed values so that signing them again gives the same bytes
// (Ed25519 is deterministic).
func goldenMessages(t *testing.T) map[string]*Message {
	t.Helper()
	req := &Message{
		V: Version, ID: "msg_01JDQ4ZK6W3V2Z8Q9R1T5Y7N2B", TS: "2026-11-25T13:20:11.123Z",
		ThreadID: "thr_01JDQ4ZK6W3V2Z8Q9R1T5Y7N2C", RunID: "run_01JDQ4ZK6W3V2Z8Q9R1T5Y7N2D",
		TaskID: "task_01JDQ4ZK6W3V2Z8Q9R1T5Y7N2E",
		From:   Participant{AgentID: "agent:ui", Role: "user"},
		To:     []Participant{{AgentID: "agent:orchestrator"}},
		Type:   TypeTaskRequest, Domain: "research", PayloadType: "research.query.v1",
		SchemaRef: "schema://clutch/research/query@1",
		Requires:  []string{"skill:research"}, Prefers: []string{"domain:fintech"},
		Attempt: 1,
		Meta:    map[string]any{"ui_channel": "chat:research", "note": "café ✓ \"quoted\""},
	}
	if err := req.SetPayload(map[string]any{"query": "Nordic payments market", "max_sources": 5, "ratio": 0.25}); err != nil {
		t.Fatal(err)
	}
	res := req.Clone()
	res.ID, res.Type = "msg_01JDQ4ZK6W3V2Z8Q9R1T5Y7N2Z", TypeTaskResult
	res.From, res.To = Participant{AgentID: "agent:ken", Role: "worker"}, []Participant{{AgentID: "agent:orchestrator"}}
	res.PayloadType, res.SchemaRef = "research.summary.v1", "schema://clutch/research/summary@1"
	res.Requires, res.Prefers, res.Meta = nil, nil, nil
	res.Extensions = map[string]json.RawMessage{"in_reply_to": json.RawMessage(`"msg_01JDQ4ZK6W3V2Z8Q9R1T5Y7N2B"`)}
	if err := res.SetPayload(map[string]any{"title": "Done", "findings": []string{"a", "b"}, "citations": []string{"https://example.com/x"}}); err != nil {
		t.Fatal(err)
	}
	return map[string]*Message{"01-task.request": req, "02-task.result-extension": res}
}

// TestSignedGolden checks the signed messages in testdata/signed, which
// exist so that an implementation in another language can verify them: for
// each, NAME.json is the signed envelope, NAME.canonical the JCS signing
// input, and key.txt the public key (hex). Run with -update to rewrite.
func TestSignedGolden(t *testing.T) {
	priv := goldenKey()
	pub := priv.Public().(ed25519.PublicKey)
	keys := StaticKeys{"key_test_01": pub}
	keyLine := "ed25519 public key (hex), kid key_test_01, from seed 000102...1f:\n" + hex.EncodeToString(pub) + "\n"
	if *update {
		if err := os.MkdirAll("testdata/signed", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("testdata/signed/key.txt", []byte(keyLine), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := string(readTestdata(t, "signed/key.txt")); got != keyLine {
		t.Fatalf("key.txt = %q, want %q", got, keyLine)
	}
	for name, m := range goldenMessages(t) {
		t.Run(name, func(t *testing.T) {
			if err := Sign(m, "key_test_01", priv); err != nil {
				t.Fatal(err)
			}
			unsigned := m.Clone()
			unsigned.Security.Auth.Sig = ""
			unsigned.Reset()
			ub, err := appendMessage(nil, unsigned)
			if err != nil {
				t.Fatal(err)
			}
			canon, err := Canonical(ub)
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				for f, b := range map[string][]byte{name + ".json": m.Raw(), name + ".canonical": canon} {
					if err := os.WriteFile(filepath.Join("testdata/signed", f), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			golden := readTestdata(t, "signed/"+name+".json")
			if !bytes.Equal(m.Raw(), golden) {
				t.Fatalf("signing again gave different bytes\n got %s\nwant %s", m.Raw(), golden)
			}
			if want := readTestdata(t, "signed/"+name+".canonical"); !bytes.Equal(canon, want) {
				t.Fatalf("canonical signing input differs\n got %s\nwant %s", canon, want)
			}
			if err := Verify(golden, keys); err != nil {
				t.Fatalf("golden message does not verify: %v", err)
			}
			// The signature is over the canonical form: whitespace and member
			// order do not matter, content does.
			var pretty bytes.Buffer
			pretty.Write(bytes.ReplaceAll(golden, []byte(`,"`), []byte(",\n  \"")))
			if err := Verify(pretty.Bytes(), keys); err != nil {
				t.Fatalf("re-formatted message does not verify: %v", err)
			}
		})
	}
}

var sigRE = regexp.MustCompile(`"sig":"([^"]*)"`)

func TestVerifyRejects(t *testing.T) {
	priv := goldenKey()
	keys := StaticKeys{"key_test_01": priv.Public().(ed25519.PublicKey)}
	golden := string(readTestdata(t, "signed/01-task.request.json"))
	_, otherPriv, _ := ed25519.GenerateKey(nil)
	other := goldenMessages(t)["01-task.request"]
	if err := Sign(other, "key_test_01", otherPriv); err != nil {
		t.Fatal(err)
	}
	unsigned := goldenMessages(t)["01-task.request"]
	if _, err := Encode(unsigned); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		raw  string
		code Code
	}{
		{"mutated payload", strings.Replace(golden, "Nordic", "Baltic", 1), CodeBadSignature},
		{"mutated meta", strings.Replace(golden, "chat:research", "chat:other", 1), CodeBadSignature},
		{"attempt changed", strings.Replace(golden, `"attempt":1`, `"attempt":2`, 1), CodeBadSignature},
		{"extension added", strings.Replace(golden, `{"v":`, `{"x_added":true,"v":`, 1), CodeBadSignature},
		{"duplicate key", strings.Replace(golden, `{"v":`, `{"domain":"ops","v":`, 1), CodeDuplicateKey},
		{"invalid utf8", strings.Replace(golden, "café", "caf\xe9", 1), CodeInvalidUTF8},
		{"wrong key", string(other.Raw()), CodeBadSignature},
		{"unknown kid", strings.Replace(golden, `"kid":"key_test_01"`, `"kid":"key_other"`, 1), CodeUnknownKey},
		{"wrong scheme", strings.Replace(golden, `"scheme":"ed25519"`, `"scheme":"hmac"`, 1), CodeBadSignature},
		{"truncated sig", strings.Replace(golden, `"sig":"`, `"sig":"AA`, 1), CodeBadSignature},
		{"not signed", string(unsigned.Raw()), CodeBadSignature},
		{"kid not a string", strings.Replace(golden, `"kid":"key_test_01"`, `"kid":1`, 1), CodeBadSignature},
		{"scheme not a string", strings.Replace(golden, `"scheme":"ed25519"`, `"scheme":null`, 1), CodeBadSignature},
		{"empty sig", sigRE.ReplaceAllString(golden, `"sig":""`), CodeBadSignature},
		{"sig with padding", sigRE.ReplaceAllString(golden, `"sig":"$1="`), CodeBadSignature},
		{"sig not a string", sigRE.ReplaceAllString(golden, `"sig":["$1"]`), CodeBadSignature},
		{"security not an object", strings.Replace(golden, `"security":{"auth":`, `"security":[],"x_auth":{"a":`, 1), CodeWrongType},
		{"array", `[` + golden + `]`, CodeWrongType},
		{"not JSON", golden[:len(golden)-1], CodeInvalidJSON},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify([]byte(tc.raw), keys)
			if !errors.Is(err, tc.code) {
				t.Fatalf("Verify = %v, want %s", err, tc.code)
			}
		})
	}
	t.Run("resolver error", func(t *testing.T) {
		boom := errors.New("key server down")
		err := Verify([]byte(golden), KeyResolverFunc(func(string) (ed25519.PublicKey, error) { return nil, boom }))
		if !errors.Is(err, CodeUnknownKey) || !errors.Is(err, boom) {
			t.Fatalf("Verify = %v", err)
		}
	})
	t.Run("bad private key", func(t *testing.T) {
		if err := Sign(NewMessage(TypeChatMessage, "agent:a"), "k", ed25519.PrivateKey{1, 2}); !errors.Is(err, CodeBadSignature) {
			t.Fatalf("Sign = %v", err)
		}
	})
}

func TestSignRoundTripThroughDecode(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(nil)
	m := NewMessage(TypeTaskRequest, "agent:a")
	if err := m.SetPayload(map[string]any{"q": "x"}); err != nil {
		t.Fatal(err)
	}
	if err := Sign(m, "k1", priv); err != nil {
		t.Fatal(err)
	}
	d, err := Decode(m.Raw())
	if err != nil {
		t.Fatal(err)
	}
	if d.Security.Auth.Kid != "k1" || len(d.Security.Auth.Sig) != 86 {
		t.Fatalf("auth = %+v", d.Security.Auth)
	}
	if err := Verify(d.Raw(), StaticKeys{"k1": priv.Public().(ed25519.PublicKey)}); err != nil {
		t.Fatal(err)
	}
}
