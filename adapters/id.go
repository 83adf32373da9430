package adapters

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"unicode/utf8"

	"github.com/clutchprotocol/clutch/protocol"
)

// ValidForeignID reports whether s, an id a peer or client chose (an A2A
// messageId or contextId, an AG-UI threadId or runId), can be kept as it
// is: at most [protocol.MaxIDLength] bytes of valid UTF-8 without control
// characters (C0, DEL, C1). The empty string is valid; callers that need a
// value check for "" themselves.
func ValidForeignID(s string) bool {
	if len(s) > protocol.MaxIDLength || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// CallID returns the call id (docs/protocol.md §2.3.1) of a tool call
// whose outside id is id: id itself when it can be kept (not empty and
// ValidForeignID), else one derived from id and parts: "call:" and 32 hex
// digits of their SHA-256. parts name the call where the outside system
// does not (its run, its message, its place in it), so that the same call
// read again, and its outcome named by the same parts, get the same id.
func CallID(id string, parts ...string) string {
	if id != "" && ValidForeignID(id) {
		return id
	}
	h := sha256.New()
	for _, p := range append([]string{id}, parts...) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return protocol.PrefixCall + hex.EncodeToString(h.Sum(nil)[:16])
}
