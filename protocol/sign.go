package protocol

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// SchemeEd25519 is the security.auth.scheme of an Ed25519 signature.
const SchemeEd25519 = "ed25519"

// KeyResolver finds the public key for a key id (security.auth.kid).
type KeyResolver interface {
	ResolveKey(kid string) (ed25519.PublicKey, error)
}

// KeyResolverFunc adapts a function to a [KeyResolver].
type KeyResolverFunc func(kid string) (ed25519.PublicKey, error)

// ResolveKey calls f.
func (f KeyResolverFunc) ResolveKey(kid string) (ed25519.PublicKey, error) { return f(kid) }

// StaticKeys is a fixed map of key ids to public keys.
type StaticKeys map[string]ed25519.PublicKey

// ResolveKey returns the key for kid, or an UNKNOWN_KEY error.
func (k StaticKeys) ResolveKey(kid string) (ed25519.PublicKey, error) {
	if pk, ok := k[kid]; ok {
		return pk, nil
	}
	return nil, invalid(CodeUnknownKey, "/security/auth/kid", "no key for kid "+quote(kid))
}

// Sign signs m with Ed25519 (docs/protocol.md §6 "ed25519 signatures"). The rule:
//
//	sig = base64url-nopad( Ed25519( JCS( envelope without security.auth.sig ) ) )
//
// where JCS is RFC 8785 canonical JSON. Sign sets security.auth to
// {scheme: "ed25519", kid, sig}, encodes m (validating it) and remembers the
// signed bytes, so m must not be changed afterwards. A message that already
// has bytes (see [Message.Raw]) is re-encoded from its fields.
func Sign(m *Message, kid string, key ed25519.PrivateKey) error {
	if len(key) != ed25519.PrivateKeySize {
		return invalid(CodeBadSignature, "", fmt.Sprintf("private key is %d bytes, want %d", len(key), ed25519.PrivateKeySize))
	}
	if m.Security == nil {
		m.Security = &Security{}
	}
	m.Security.Auth = &Auth{Scheme: SchemeEd25519, Kid: kid}
	m.Reset()
	unsigned, err := Encode(m)
	if err != nil {
		return err
	}
	canon, err := canonical(unsigned)
	if err != nil {
		return err
	}
	m.Security.Auth.Sig = base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, canon))
	m.Reset()
	_, err = Encode(m)
	return err
}

// Verify checks the Ed25519 signature of the envelope in raw, the bytes as
// received, so members this package does not know are covered too. It
// rejects duplicate keys and invalid UTF-8 before anything else, then
// requires security.auth.scheme "ed25519", resolves kid with keys and checks
// the signature over the JCS bytes of raw without security.auth.sig.
// Failures are BAD_SIGNATURE, UNKNOWN_KEY or the decoding error.
func Verify(raw []byte, keys KeyResolver) error {
	// The strict scanner first: a parser differential (one parser verifies,
	// another acts) is the classic hole in JSON signing.
	if err := checkJSON(raw, ""); err != nil {
		return err
	}
	var top map[string]jsontext.Value
	if err := jsonv2.Unmarshal(raw, &top); err != nil {
		return wrapUnmarshal(err, "")
	}
	var sec map[string]jsontext.Value
	if err := unmarshalMember(top, "security", &sec); err != nil {
		return err
	}
	var auth map[string]jsontext.Value
	if err := unmarshalMember(sec, "auth", &auth); err != nil {
		return err
	}
	var scheme, kid, sig string
	for _, f := range []struct {
		name string
		dst  *string
	}{{"scheme", &scheme}, {"kid", &kid}, {"sig", &sig}} {
		if v, ok := auth[f.name]; ok {
			if err := jsonv2.Unmarshal(v, f.dst); err != nil {
				return invalid(CodeBadSignature, "/security/auth/"+f.name, "not a string")
			}
		}
	}
	if scheme != SchemeEd25519 {
		return invalid(CodeBadSignature, "/security/auth/scheme", "scheme "+quote(scheme)+" is not "+quote(SchemeEd25519))
	}
	if sig == "" {
		return invalid(CodeBadSignature, "/security/auth/sig", "message is not signed")
	}
	sigBytes, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || len(sigBytes) != ed25519.SignatureSize {
		return invalid(CodeBadSignature, "/security/auth/sig", "sig is not 64 bytes of base64url without padding")
	}
	if keys == nil {
		return invalid(CodeUnknownKey, "/security/auth/kid", "no key resolver")
	}
	pub, err := keys.ResolveKey(kid)
	if err != nil {
		if CodeOf(err) == CodeUnknownKey {
			return err
		}
		return &Error{Code: CodeUnknownKey, Path: "/security/auth/kid", Offset: -1, Detail: "cannot resolve kid " + quote(kid), Err: err}
	}
	if len(pub) != ed25519.PublicKeySize {
		return invalid(CodeUnknownKey, "/security/auth/kid", "key for kid "+quote(kid)+" is not an Ed25519 public key")
	}
	delete(auth, "sig")
	if sec["auth"], err = marshalMap(auth); err != nil {
		return err
	}
	if top["security"], err = marshalMap(sec); err != nil {
		return err
	}
	unsigned, err := marshalMap(top)
	if err != nil {
		return err
	}
	canon, err := canonical(unsigned)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, canon, sigBytes) {
		return invalid(CodeBadSignature, "/security/auth/sig", "signature does not match")
	}
	return nil
}

func unmarshalMember(obj map[string]jsontext.Value, name string, dst *map[string]jsontext.Value) error {
	v, ok := obj[name]
	if !ok || v.Kind() == 'n' {
		return invalid(CodeBadSignature, "/security", "message is not signed (no "+name+")")
	}
	if v.Kind() != '{' {
		return invalid(CodeWrongType, "/"+name, "want object")
	}
	if err := jsonv2.Unmarshal(v, dst); err != nil {
		return wrapUnmarshal(err, "/"+name)
	}
	return nil
}

func marshalMap(m map[string]jsontext.Value) (jsontext.Value, error) {
	b, err := jsonv2.Marshal(m)
	if err != nil {
		return nil, &Error{Code: CodeInternal, Offset: -1, Detail: "re-encoding for verification", Err: err}
	}
	return b, nil
}

// Canonical returns the RFC 8785 (JCS) canonical form of one JSON value:
// members sorted by UTF-16 code units, no whitespace, numbers in ECMAScript
// form, strings with minimal escaping. It is the signing input of [Sign].
func Canonical(data []byte) ([]byte, error) {
	if err := checkJSON(data, ""); err != nil {
		return nil, err
	}
	return canonical(data)
}

func canonical(data []byte) ([]byte, error) {
	v := jsontext.Value(append([]byte(nil), data...))
	if err := v.Canonicalize(); err != nil {
		var syn *jsontext.SyntacticError
		if errors.As(err, &syn) {
			return nil, wrapUnmarshal(err, "")
		}
		return nil, &Error{Code: CodeInvalidJSON, Offset: -1, Detail: "cannot canonicalize", Err: err}
	}
	return v, nil
}
