package protocol

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
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

// Sign signs m with Ed25519 (docs/protocol.md §6.1). The rule:
//
//	sig = base64url-nopad( Ed25519( JCS( envelope without security.auth.sig ) ) )
//
// where JCS is RFC 8785 canonical JSON. Sign sets security.auth to
// {scheme: "ed25519", kid, sig} (on a copy of m.Security: a security
// object shared with another message is not changed), encodes m
// (validating it) and remembers the signed bytes, so m must not be changed
// afterwards. A message that already has bytes (see [Message.Raw]) is
// re-encoded from its fields.
func Sign(m *Message, kid string, key ed25519.PrivateKey) error {
	if len(key) != ed25519.PrivateKeySize {
		return invalid(CodeBadSignature, "", fmt.Sprintf("private key is %d bytes, want %d", len(key), ed25519.PrivateKeySize))
	}
	var sec Security
	if m.Security != nil {
		sec = *m.Security
	}
	sec.Auth = &Auth{Scheme: SchemeEd25519, Kid: kid}
	m.Security = &sec
	m.Reset()
	unsigned, err := Encode(m)
	if err != nil {
		return err
	}
	c := getCanon(unsigned)
	if err := c.run(); err != nil {
		c.put()
		return err
	}
	sig := ed25519.Sign(key, c.out)
	c.put()
	m.Security.Auth.Sig = base64.RawURLEncoding.EncodeToString(sig)
	m.Reset()
	_, err = Encode(m)
	return err
}

// Verify checks the Ed25519 signature of the envelope in raw, the bytes as
// received, so members this package does not know are covered too. One
// strict pass over raw refuses duplicate keys, invalid UTF-8 and anything
// else that is not strict JSON (no second parser can read the message
// differently) while it builds the JCS signing input; then Verify requires
// security.auth.scheme "ed25519", resolves kid with keys and checks the
// signature. Failures are BAD_SIGNATURE, UNKNOWN_KEY or the decoding error.
//
// Verify proves that the holder of kid's private key signed these bytes;
// which kids may speak for which agent is the resolver's business (see
// docs/protocol.md §6.1 "Keys").
func Verify(raw []byte, keys KeyResolver) error {
	c := getCanon(raw)
	defer c.put()
	c.sig = true
	if err := c.run(); err != nil {
		return err
	}
	if c.sc.data[firstByte(raw)] != '{' {
		return invalid(CodeWrongType, "", "a message is a JSON object")
	}
	switch c.secKind {
	case 0, 'n':
		return invalid(CodeBadSignature, "/security", "message is not signed (no security)")
	case '{':
	default:
		return invalid(CodeWrongType, "/security", "want object")
	}
	switch c.authKind {
	case 0, 'n':
		return invalid(CodeBadSignature, "/security", "message is not signed (no auth)")
	case '{':
	default:
		return invalid(CodeWrongType, "/security/auth", "want object")
	}
	if c.schemeBad || c.kidBad {
		return invalid(CodeBadSignature, "/security/auth", "scheme and kid must be strings")
	}
	if scheme := rawString(c.scheme); scheme != SchemeEd25519 {
		return invalid(CodeBadSignature, "/security/auth/scheme", "scheme "+quote(scheme)+" is not "+quote(SchemeEd25519))
	}
	if !c.sigStr || len(c.sigValue) <= 2 { // absent, not a string, or ""
		return invalid(CodeBadSignature, "/security/auth/sig", "message is not signed")
	}
	var sig [ed25519.SignatureSize]byte
	src := c.sigValue[1 : len(c.sigValue)-1] // without the quotes
	if base64.RawURLEncoding.EncodedLen(len(sig)) != len(src) {
		return invalid(CodeBadSignature, "/security/auth/sig", "sig is not 64 bytes of base64url without padding")
	}
	if _, err := base64.RawURLEncoding.Strict().Decode(sig[:], src); err != nil {
		return invalid(CodeBadSignature, "/security/auth/sig", "sig is not 64 bytes of base64url without padding")
	}
	if keys == nil {
		return invalid(CodeUnknownKey, "/security/auth/kid", "no key resolver")
	}
	kid := rawString(c.kid)
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
	if !ed25519.Verify(pub, c.out, sig[:]) {
		return invalid(CodeBadSignature, "/security/auth/sig", "signature does not match")
	}
	return nil
}

// firstByte is the index of the first non-space byte of checked JSON.
func firstByte(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// rawString decodes the content of a checked JSON string (nil: "").
func rawString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	for _, c := range b {
		if c == '\\' {
			return unescape(b)
		}
	}
	return string(b)
}

// Canonical returns the RFC 8785 (JCS) canonical form of one JSON value:
// members sorted by UTF-16 code units, no whitespace, numbers in ECMAScript
// form, strings with minimal escaping. It is the signing input of [Sign].
// The input is read strictly, as by [Decode]: duplicate keys, invalid UTF-8
// and numbers beyond the range of a double are errors.
func Canonical(data []byte) ([]byte, error) {
	c := getCanon(data)
	defer c.put()
	if err := c.run(); err != nil {
		return nil, err
	}
	return append([]byte(nil), c.out...), nil
}
