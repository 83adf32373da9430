package redact

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/clutchprotocol/clutch/protocol"
)

// Redacted replaces a credential.
const Redacted = "[redacted]"

// keys are the credential member names, lower case with '-' as '_'.
var keys = map[string]bool{
	"authorization": true, "proxy_authorization": true, "cookie": true, "set_cookie": true,
	"x_api_key": true, "api_key": true, "apikey": true, "x_auth_token": true, "auth_token": true,
	"token": true, "access_token": true, "refresh_token": true, "id_token": true, "bearer_token": true,
	"client_secret": true, "secret": true, "password": true, "passwd": true, "private_key": true,
}

// Key reports whether a member of this name holds a credential.
func Key(name string) bool {
	return keys[strings.ReplaceAll(strings.ToLower(name), "-", "_")]
}

// Value reports whether a string is an HTTP credential (an authorization
// header's value).
func Value(s string) bool {
	return len(s) > 7 && (strings.EqualFold(s[:7], "bearer ") || strings.EqualFold(s[:6], "basic "))
}

// hints are parts of every credential name and value above; input that
// has none of them needs no walk.
var hints = [][]byte{
	[]byte("uthoriz"), []byte("UTHORIZ"), []byte("ookie"), []byte("OOKIE"), []byte("oken"), []byte("OKEN"),
	[]byte("ecret"), []byte("ECRET"), []byte("assw"), []byte("ASSW"), []byte("pi_key"), []byte("pi-key"),
	[]byte("pikey"), []byte("PI_KEY"), []byte("PI-KEY"), []byte("PIKEY"), []byte("rivate"), []byte("RIVATE"),
	[]byte("earer "), []byte("EARER "), []byte("asic "), []byte("ASIC "),
}

func mayHold(b []byte) bool {
	for _, h := range hints {
		if bytes.Contains(b, h) {
			return true
		}
	}
	return false
}

// Message redacts the credentials in m's payload and meta, in place. It
// returns the error of m.SetPayload when the redacted payload does not
// set (it always should).
func Message(m *protocol.Message) error {
	for k, v := range m.Meta {
		if Key(k) {
			m.Meta[k] = Redacted
			continue
		}
		m.Meta[k] = Any(v)
	}
	if !mayHold(m.Payload) {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(m.Payload))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil
	}
	changed := false
	v = walk(v, &changed)
	if !changed {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return m.SetPayload(json.RawMessage(b))
}

// Any returns v with its credentials redacted: maps and slices are
// changed in place.
func Any(v any) any {
	var changed bool
	return walk(v, &changed)
}

func walk(v any, changed *bool) any {
	switch x := v.(type) {
	case string:
		if Value(x) {
			*changed = true
			return Redacted
		}
	case map[string]any:
		for k, e := range x {
			if Key(k) {
				if e != Redacted {
					*changed = true
				}
				x[k] = Redacted
				continue
			}
			x[k] = walk(e, changed)
		}
	case []any:
		for i, e := range x {
			x[i] = walk(e, changed)
		}
	case json.RawMessage:
		if mayHold(x) {
			d := json.NewDecoder(bytes.NewReader(x))
			d.UseNumber()
			var y any
			if d.Decode(&y) == nil {
				c := false
				y = walk(y, &c)
				if c {
					*changed = true
					return y
				}
			}
		}
	}
	return v
}
