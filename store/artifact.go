package store

import (
	"crypto/sha256"
	"encoding/hex"
	"mime"
	"strconv"
	"strings"

	"github.com/clutchprotocol/clutch/protocol"
)

// ArtifactRefPrefix starts every artifact ref: the protocol's "artifact:"
// (docs/protocol.md Appendix B) and the hash algorithm.
const ArtifactRefPrefix = protocol.PrefixArtifact + "sha256:"

// ArtifactRef returns the content address of data (docs/protocol.md §8.2):
// "artifact:sha256:" and the lower-case hex SHA-256 of the bytes. Every
// backend names artifacts with it, so the same bytes have the same ref in
// any store.
func ArtifactRef(data []byte) string {
	sum := sha256.Sum256(data)
	return ArtifactRefFromDigest(sum)
}

// ArtifactRefFromDigest returns the ref of content whose SHA-256 is sum.
func ArtifactRefFromDigest(sum [sha256.Size]byte) string {
	var b [len(ArtifactRefPrefix) + 2*sha256.Size]byte
	n := copy(b[:], ArtifactRefPrefix)
	hex.Encode(b[n:], sum[:])
	return string(b[:])
}

// ParseArtifactRef returns the digest named by ref. Only the canonical
// form is accepted: "artifact:sha256:" and exactly 64 lower-case hex
// digits; anything else gives ErrInvalidRef.
func ParseArtifactRef(ref string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	h, ok := strings.CutPrefix(ref, ArtifactRefPrefix)
	if !ok || len(h) != 2*sha256.Size {
		return sum, badRef(ref)
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return sum, badRef(ref)
		}
	}
	if _, err := hex.Decode(sum[:], []byte(h)); err != nil {
		return sum, badRef(ref)
	}
	return sum, nil
}

func badRef(ref string) error {
	if len(ref) > 100 {
		ref = ref[:100] + "…"
	}
	return &refError{ref: ref}
}

type refError struct{ ref string }

func (e *refError) Error() string {
	return ErrInvalidRef.Error() + ": " + strconv.Quote(e.ref) + " is not " + ArtifactRefPrefix + "<64 lower-case hex digits>"
}

func (e *refError) Unwrap() error { return ErrInvalidRef }

// CheckMediaType returns the media type a store keeps for mediaType:
// [DefaultMediaType] for "", mediaType itself when it parses, and an
// error matching ErrInvalidMediaType otherwise.
func CheckMediaType(mediaType string) (string, error) {
	if mediaType == "" {
		return DefaultMediaType, nil
	}
	if len(mediaType) > 255 {
		return "", &mediaTypeError{mediaType[:255] + "…"}
	}
	if _, _, err := mime.ParseMediaType(mediaType); err != nil {
		return "", &mediaTypeError{mediaType}
	}
	return mediaType, nil
}

type mediaTypeError struct{ mt string }

func (e *mediaTypeError) Error() string {
	return ErrInvalidMediaType.Error() + ": " + strconv.Quote(e.mt)
}

func (e *mediaTypeError) Unwrap() error { return ErrInvalidMediaType }
