package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
)

// The Standard Webhooks headers (docs/protocol.md §7.3).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every secret: "whsec_" and the key in standard base64.
const SecretPrefix = "whsec_"

// Limits of the header values a verifier reads.
const (
	// MinSecretBytes is the shortest key a secret may hold.
	MinSecretBytes = 16
	maxSecretBytes = 1024
	maxIDBytes     = 200 // leaves room in ids derived from it (protocol.MaxIDLength)
	maxSignatures  = 16
	maxSigHeader   = 4096
)

// DefaultTolerance is how far a delivery's webhook-timestamp may be from the
// receiver's clock, in either direction.
const DefaultTolerance = 5 * time.Minute

// parseSecret decodes "whsec_<base64>" into the HMAC key.
func parseSecret(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, optionsError(`a secret must start with "whsec_"`)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, optionsError("a secret is not standard base64 after whsec_")
	}
	if len(key) < MinSecretBytes || len(key) > maxSecretBytes {
		return nil, optionsError("a secret must hold " + strconv.Itoa(MinSecretBytes) + " to " + strconv.Itoa(maxSecretBytes) + " bytes")
	}
	return key, nil
}

// Sign returns the webhook-signature header value of a delivery: "v1," and
// the standard base64 of the HMAC-SHA256, keyed by secret ("whsec_<base64>"),
// of "<id>.<unix seconds of ts>.<body>".
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := parseSecret(secret)
	if err != nil {
		return "", err
	}
	return "v1," + b64(mac(key, id, ts.Unix(), body)), nil
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func mac(key []byte, id string, ts int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	var buf [20]byte
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(buf[:0], ts, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// headers are the parsed webhook-* headers of one delivery.
type headers struct {
	id   string
	ts   int64
	sigs [][]byte // the v1 signatures, decoded
}

// parseHeaders reads the three headers strictly: an id of 1 to 200 printable
// ASCII bytes, a timestamp of decimal Unix seconds, and a space-separated list
// of at most 16 "<version>,<base64>" signatures of which at least one is a v1
// signature of 32 bytes (other versions, e.g. the asymmetric v1a, are
// skipped, as the scheme asks).
func parseHeaders(id, ts, sig string) (headers, error) {
	var h headers
	switch {
	case id == "":
		return h, signatureError(protocol.CodeMissingField, "the webhook-id header is missing")
	case ts == "":
		return h, signatureError(protocol.CodeMissingField, "the webhook-timestamp header is missing")
	case sig == "":
		return h, signatureError(protocol.CodeBadSignature, "the webhook-signature header is missing")
	}
	if len(id) > maxIDBytes {
		return h, signatureError(protocol.CodeInvalidField, "the webhook-id header is over 200 bytes")
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return h, signatureError(protocol.CodeInvalidField, "the webhook-id header holds a byte that is not printable ASCII")
		}
	}
	h.id = id
	if len(ts) > 12 {
		return h, signatureError(protocol.CodeInvalidField, "the webhook-timestamp header is not Unix seconds")
	}
	for i := 0; i < len(ts); i++ {
		if ts[i] < '0' || ts[i] > '9' {
			return h, signatureError(protocol.CodeInvalidField, "the webhook-timestamp header is not Unix seconds")
		}
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return h, signatureError(protocol.CodeInvalidField, "the webhook-timestamp header is not Unix seconds")
	}
	h.ts = n
	if len(sig) > maxSigHeader {
		return h, signatureError(protocol.CodeBadSignature, "the webhook-signature header is too long")
	}
	count := 0
	for f := range strings.FieldsSeq(sig) {
		count++
		if count > maxSignatures {
			return h, signatureError(protocol.CodeBadSignature, "the webhook-signature header holds more than 16 signatures")
		}
		version, b64, ok := strings.Cut(f, ",")
		if !ok {
			return h, signatureError(protocol.CodeBadSignature, `a signature is not "<version>,<base64>"`)
		}
		if version != "v1" {
			continue
		}
		s, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(s) != sha256.Size {
			continue // cannot match; another signature may
		}
		h.sigs = append(h.sigs, s)
	}
	if len(h.sigs) == 0 {
		return h, signatureError(protocol.CodeBadSignature, "the webhook-signature header holds no v1 signature")
	}
	return h, nil
}

// key is one configured secret and the sender it authenticates.
type key struct {
	key    []byte
	caller int // index into the handler's callers
}

// verify checks h and body against keys at now with tolerance tol; it returns
// the index of the caller whose secret signed the delivery.
func verify(keys []key, h headers, body []byte, now time.Time, tol time.Duration) (int, error) {
	t := time.Unix(h.ts, 0)
	if d := now.Sub(t); d > tol || d < -tol {
		return -1, signatureError(protocol.CodeBadSignature, "the webhook-timestamp is outside the tolerance of "+tol.String())
	}
	for _, k := range keys {
		want := mac(k.key, h.id, h.ts, body)
		for _, s := range h.sigs {
			if hmac.Equal(want, s) {
				return k.caller, nil
			}
		}
	}
	return -1, signatureError(protocol.CodeBadSignature, "no signature matches a configured secret")
}
