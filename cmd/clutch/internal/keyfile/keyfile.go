package keyfile

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/atomicfile"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// ErrKeyFile: the key file does not parse or holds an invalid key.
var ErrKeyFile error = coded.New("invalid key file", protocol.CodeInvalidField)

// Keys are the public keys of a key file, by agent and kid.
type Keys struct {
	agents map[string]map[string]ed25519.PublicKey
}

// Load reads and parses the key file at path.
func Load(path string) (*Keys, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k, err := Parse(data)
	if err != nil {
		return nil, atPath(path, err)
	}
	return k, nil
}

// atPath puts the file's path before the detail of a Parse error, so the
// error says "invalid key file" once: "invalid key file: keys.json: line
// 3: …".
func atPath(path string, err error) error {
	var wr *coded.Wrapped
	if errors.As(err, &wr) && wr.Sentinel == ErrKeyFile {
		return coded.Wrap(ErrKeyFile, path+": "+wr.Detail, wr.Cause)
	}
	return coded.Wrap(ErrKeyFile, path, err)
}

// problem says in words, with its line, why data is not a key file: the
// decoder's own message names Go types.
func problem(data []byte, err error) string {
	at := func(off int64) string {
		if off < 0 || off > int64(len(data)) {
			return ""
		}
		return "line " + strconv.Itoa(1+bytes.Count(data[:off], []byte{'\n'})) + ": "
	}
	var se *jsonv2.SemanticError
	if errors.As(err, &se) {
		var parts []string
		for _, p := range strings.Split(strings.TrimPrefix(string(se.JSONPointer), "/"), "/") {
			parts = append(parts, strings.NewReplacer("~1", "/", "~0", "~").Replace(p))
		}
		kind := map[jsontext.Kind]string{'n': "null", 'f': "boolean", 't': "boolean", '"': "string", '0': "number",
			'{': "object", '[': "array"}[se.JSONKind]
		switch {
		case errors.Is(se.Err, jsonv2.ErrUnknownName) && len(parts) == 3:
			return at(se.ByteOffset) + parts[0] + " key " + parts[1] + ": unknown member " + strconv.Quote(parts[2]) + " (a key has kid, alg and public_key)"
		case se.JSONPointer == "":
			return at(se.ByteOffset) + "a JSON " + kind + ", not an object of agent id to a list of keys"
		case len(parts) == 1:
			return at(se.ByteOffset) + parts[0] + ": a JSON " + kind + ", not a list of keys"
		case len(parts) == 2:
			return at(se.ByteOffset) + parts[0] + " key " + parts[1] + ": a JSON " + kind + ", not an object with kid, alg and public_key"
		case len(parts) == 3:
			return at(se.ByteOffset) + parts[0] + " key " + parts[1] + ": " + parts[2] + " is a JSON " + kind + ", not a string"
		}
		return at(se.ByteOffset) + "not an object of agent id to a list of keys"
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		return at(syn.ByteOffset) + "not valid JSON: " + strings.TrimPrefix(syn.Err.Error(), "jsontext: ")
	}
	return "not an object of agent id to a list of keys"
}

type entry struct {
	Kid       string `json:"kid"`
	Alg       string `json:"alg,omitempty"`
	PublicKey string `json:"public_key"`
}

// Parse parses a key file's contents. Bad input gives an error matching
// ErrKeyFile, never a panic.
func Parse(data []byte) (*Keys, error) {
	var file map[string][]entry
	if err := jsonv2.Unmarshal(data, &file, jsonv2.RejectUnknownMembers(true)); err != nil {
		return nil, coded.Wrap(ErrKeyFile, problem(data, err), nil)
	}
	k := &Keys{agents: make(map[string]map[string]ed25519.PublicKey, len(file))}
	for agent, list := range file {
		if agent == "" {
			return nil, coded.Wrap(ErrKeyFile, "an empty agent id", nil)
		}
		byKid := make(map[string]ed25519.PublicKey, len(list))
		for i, e := range list {
			where := agent + " key " + strconv.Itoa(i)
			if e.Alg == "" {
				e.Alg = protocol.SchemeEd25519
			}
			if _, dup := byKid[e.Kid]; dup {
				return nil, coded.Wrap(ErrKeyFile, where+": kid "+strconv.Quote(e.Kid)+" twice", nil)
			}
			ck := protocol.CardKey{Kid: e.Kid, Alg: e.Alg, PublicKey: e.PublicKey}
			pub, err := ck.Ed25519()
			if err != nil {
				// The other accepted spelling: standard base64 with padding.
				raw, berr := base64.StdEncoding.Strict().DecodeString(e.PublicKey)
				if berr != nil || len(raw) != ed25519.PublicKeySize {
					return nil, coded.Wrap(ErrKeyFile, where, err)
				}
				ck.PublicKey = base64.RawURLEncoding.EncodeToString(raw)
				if pub, err = ck.Ed25519(); err != nil {
					return nil, coded.Wrap(ErrKeyFile, where, err)
				}
			}
			byKid[e.Kid] = pub
		}
		k.agents[agent] = byKid
	}
	return k, nil
}

// Agents returns how many agents have keys.
func (k *Keys) Agents() int { return len(k.agents) }

// For returns the resolver of the keys of one agent: a kid of another
// agent, or none, gives UNKNOWN_KEY.
func (k *Keys) For(agentID string) protocol.KeyResolver {
	return protocol.StaticKeys(k.agents[agentID])
}

// Verify checks the signature of the stored message raw from agentID
// against that agent's keys (protocol.Verify).
func (k *Keys) Verify(raw []byte, agentID string) error {
	return protocol.Verify(raw, k.For(agentID))
}

// Add adds keys to the key file at path, creating it if needed, and keeps
// the keys it lists already: a process that signs with new keys each time
// it starts adds them, so the file verifies everything it signed before
// too. A key already listed under its agent and kid is left as it is; the
// same kid with another key is an error (a kid names one key forever,
// docs/protocol.md §6.1), and so is a file that is not a key file. The
// file is replaced atomically.
func Add(path string, keys map[string][]protocol.CardKey) error {
	file := map[string][]entry{}
	old := &Keys{}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if old, err = Parse(data); err != nil {
			return atPath(path, err)
		}
		if err := jsonv2.Unmarshal(data, &file); err != nil {
			return coded.Wrap(ErrKeyFile, path+": "+problem(data, err), nil)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	for agent, list := range keys {
		if agent == "" {
			return coded.Wrap(ErrKeyFile, "an empty agent id", nil)
		}
		for _, ck := range list {
			pub, err := ck.Ed25519()
			if err != nil {
				return coded.Wrap(ErrKeyFile, agent, err)
			}
			if have, ok := old.agents[agent][ck.Kid]; ok {
				if !have.Equal(pub) {
					return coded.Wrap(ErrKeyFile, path+": "+agent+" has another key under kid "+strconv.Quote(ck.Kid), nil)
				}
				continue
			}
			file[agent] = append(file[agent], entry{Kid: ck.Kid, Alg: ck.Alg, PublicKey: ck.PublicKey})
		}
	}
	out, err := jsonv2.Marshal(file, jsonv2.Deterministic(true), jsontext.WithIndent("  "))
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(out, '\n'), 0o644) // public keys: anyone may verify
}
