package adapters

import (
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
