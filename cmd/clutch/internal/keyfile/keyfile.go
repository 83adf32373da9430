package keyfile

import (
	"crypto/ed25519"
	"encoding/base64"
	"os"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// ErrKeyFile: the key file does not parse or holds an invalid key.
var ErrKeyFile error = coded.New("keyfile: invalid key file", protocol.CodeInvalidField)

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
		return nil, coded.Wrap(ErrKeyFile, path, err)
	}
	return k, nil
}

type entry struct {
	Kid       string `json:"kid"`
	Alg       string `json:"alg"`
	PublicKey string `json:"public_key"`
}

// Parse parses a key file's contents. Bad input gives an error matching
// ErrKeyFile, never a panic.
func Parse(data []byte) (*Keys, error) {
	var file map[string][]entry
	if err := jsonv2.Unmarshal(data, &file, jsonv2.RejectUnknownMembers(true)); err != nil {
		return nil, coded.Wrap(ErrKeyFile, "not an object of agent id to a list of keys", err)
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
