package keyfile

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

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
	Alg       string `json:"alg,omitempty"`
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
			return coded.Wrap(ErrKeyFile, path, err)
		}
		if err := jsonv2.Unmarshal(data, &file); err != nil {
			return coded.Wrap(ErrKeyFile, path, err)
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
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a failure; gone after the rename
	if _, err := tmp.Write(append(out, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil { // public keys: anyone may verify
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
