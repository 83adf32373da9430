package keyfile_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/keyfile"
	"github.com/clutchprotocol/clutch/protocol"
)

func signed(t testing.TB, from, kid string, priv ed25519.PrivateKey) []byte {
	m := protocol.NewMessage(protocol.TypeChatMessage, from)
	m.Payload = json.RawMessage(`{"text":"hi"}`)
	if err := protocol.Sign(m, kid, priv); err != nil {
		t.Fatal(err)
	}
	return m.Raw()
}

func TestVerify(t *testing.T) {
	pubUI, privUI, _ := ed25519.GenerateKey(nil)
	pubKen, privKen, _ := ed25519.GenerateKey(nil)
	file := fmt.Sprintf(`{"agent:ui":[{"kid":"k_ui","public_key":%q}],"agent:ken":[{"kid":"k_ken","alg":"ed25519","public_key":%q}]}`,
		base64.RawURLEncoding.EncodeToString(pubUI), base64.StdEncoding.EncodeToString(pubKen))
	path := filepath.Join(t.TempDir(), "keys.json")
	os.WriteFile(path, []byte(file), 0o600)
	k, err := keyfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if k.Agents() != 2 {
		t.Fatalf("Agents = %d", k.Agents())
	}
	if err := k.Verify(signed(t, "agent:ui", "k_ui", privUI), "agent:ui"); err != nil {
		t.Fatalf("ui: %v", err)
	}
	if err := k.Verify(signed(t, "agent:ken", "k_ken", privKen), "agent:ken"); err != nil {
		t.Fatalf("ken (standard base64 key): %v", err)
	}
	// Ken's key does not sign for the UI.
	if err := k.Verify(signed(t, "agent:ui", "k_ken", privKen), "agent:ui"); !errors.Is(err, protocol.CodeUnknownKey) {
		t.Fatalf("another agent's key: %v, want UNKNOWN_KEY", err)
	}
	// A wrong key under the right kid.
	if err := k.Verify(signed(t, "agent:ui", "k_ui", privKen), "agent:ui"); !errors.Is(err, protocol.CodeBadSignature) {
		t.Fatalf("wrong key: %v, want BAD_SIGNATURE", err)
	}
}

func TestInvalidFiles(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(nil)
	good := base64.RawURLEncoding.EncodeToString(pub)
	for name, file := range map[string]string{
		"not json":       `{`,
		"array":          `[]`,
		"not a list":     `{"agent:ui":{"kid":"k"}}`,
		"short key":      `{"agent:ui":[{"kid":"k","public_key":"AAAA"}]}`,
		"bad alg":        `{"agent:ui":[{"kid":"k","alg":"rsa","public_key":"` + good + `"}]}`,
		"no kid":         `{"agent:ui":[{"public_key":"` + good + `"}]}`,
		"kid twice":      `{"agent:ui":[{"kid":"k","public_key":"` + good + `"},{"kid":"k","public_key":"` + good + `"}]}`,
		"unknown member": `{"agent:ui":[{"kid":"k","public_key":"` + good + `","x":1}]}`,
		"duplicate":      `{"agent:ui":[],"agent:ui":[]}`,
		"empty agent":    `{"":[]}`,
	} {
		if _, err := keyfile.Parse([]byte(file)); !errors.Is(err, keyfile.ErrKeyFile) {
			t.Errorf("%s: %v, want ErrKeyFile", name, err)
		}
	}
}

// Add creates the file, adds keys to it, keeps what it lists, and
// refuses a kid bound to another key and a file that is not a key file.
func TestAdd(t *testing.T) {
	pub1, priv1, _ := ed25519.GenerateKey(nil)
	pub2, priv2, _ := ed25519.GenerateKey(nil)
	pub3, _, _ := ed25519.GenerateKey(nil)
	path := filepath.Join(t.TempDir(), "demo-keys.json")
	first := map[string][]protocol.CardKey{"agent:ui": {protocol.NewCardKey("k1", pub1)}}
	if err := keyfile.Add(path, first); err != nil {
		t.Fatal(err)
	}
	if err := keyfile.Add(path, map[string][]protocol.CardKey{"agent:ui": {protocol.NewCardKey("k2", pub2)}, "agent:ken": {protocol.NewCardKey("k1", pub3)}}); err != nil {
		t.Fatal(err)
	}
	if err := keyfile.Add(path, first); err != nil { // listed already: nothing changes
		t.Fatal(err)
	}
	k, err := keyfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if k.Agents() != 2 {
		t.Fatalf("Agents = %d", k.Agents())
	}
	for kid, priv := range map[string]ed25519.PrivateKey{"k1": priv1, "k2": priv2} {
		if err := k.Verify(signed(t, "agent:ui", kid, priv), "agent:ui"); err != nil {
			t.Fatalf("%s: %v", kid, err)
		}
	}
	data, _ := os.ReadFile(path)
	if n := bytes.Count(data, []byte(`"kid"`)); n != 3 {
		t.Fatalf("%d keys in the file:\n%s", n, data)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode())
	}
	// k1 of agent:ui is pub1 forever.
	if err := keyfile.Add(path, map[string][]protocol.CardKey{"agent:ui": {protocol.NewCardKey("k1", pub3)}}); !errors.Is(err, keyfile.ErrKeyFile) {
		t.Fatalf("another key under a kid: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Fatal("a refused Add changed the file")
	}
	notKeys := filepath.Join(t.TempDir(), "notes.json")
	os.WriteFile(notKeys, []byte(`{"hello": "world"}`), 0o600)
	if err := keyfile.Add(notKeys, first); !errors.Is(err, keyfile.ErrKeyFile) {
		t.Fatalf("a file that is not a key file: %v", err)
	}
	if err := keyfile.Add(filepath.Join(t.TempDir(), "missing", "keys.json"), first); err == nil {
		t.Fatal("a file in a missing folder: no error")
	}
}

func FuzzParse(f *testing.F) {
	pub, _, _ := ed25519.GenerateKey(nil)
	f.Add([]byte(`{"agent:ui":[{"kid":"k","public_key":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}]}`))
	f.Add([]byte(`{"agent:ui":[{"kid":"k","public_key":"` + base64.StdEncoding.EncodeToString(pub) + `"}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := keyfile.Parse(data)
		if err != nil {
			if !errors.Is(err, keyfile.ErrKeyFile) {
				t.Fatalf("not ErrKeyFile: %v", err)
			}
			return
		}
		k.Verify([]byte(`{}`), "agent:ui")
	})
}

// Parse a key file and verify a message signed with one of its keys.
func Example() {
	pub, priv, _ := ed25519.GenerateKey(nil)
	file := `{"agent:ui": [{"kid": "key_ui_01", "public_key": "` + base64.RawURLEncoding.EncodeToString(pub) + `"}]}`
	keys, err := keyfile.Parse([]byte(file))
	if err != nil {
		panic(err)
	}
	m := protocol.NewMessage(protocol.TypeChatMessage, "agent:ui")
	m.Payload = json.RawMessage(`{"text":"hi"}`)
	protocol.Sign(m, "key_ui_01", priv)
	fmt.Println(keys.Verify(m.Raw(), "agent:ui"))
	fmt.Println(protocol.CodeOf(keys.Verify(m.Raw(), "agent:ken")))
	// Output:
	// <nil>
	// UNKNOWN_KEY
}

// TestErrorTexts: what is wrong with a key file, in words, with the line
// and the agent and key it is in, "invalid key file" once and no Go type
// names.
func TestErrorTexts(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{`[1]`, "line 1: a JSON array, not an object of agent id to a list of keys"},
		{"{\n\"agent:a\": \"x\"}", "line 2: agent:a: a JSON string, not a list of keys"},
		{"{\"agent:a\":[\n{\"kid\":1}]}", "line 2: agent:a key 0: kid is a JSON number, not a string"},
		{`{"agent:a":[{"kid":"k","pk":"x"}]}`, `line 1: agent:a key 0: unknown member "pk" (a key has kid, alg and public_key)`},
		{`{"agent:a":[1]}`, "line 1: agent:a key 0: a JSON number, not an object with kid, alg and public_key"},
		{`{x`, "line 1: not valid JSON: invalid character 'x' at start of value"},
	} {
		path := filepath.Join(t.TempDir(), "keys.json")
		if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := keyfile.Load(path)
		if want := "invalid key file: " + path + ": " + c.want; err == nil || err.Error() != want || !errors.Is(err, keyfile.ErrKeyFile) {
			t.Errorf("%s:\n got %v\nwant %s", c.file, err, want)
		}
		if err := keyfile.Add(path, nil); err == nil || strings.Count(err.Error(), "invalid key file") != 1 {
			t.Errorf("Add to %s: %v; want one \"invalid key file\"", c.file, err)
		}
	}
}
