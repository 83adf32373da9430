package clowl

import (
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/protocol"
)

// wantString reads an optional string member: absent and null give ""
// and present=false.
func wantString(v []byte, path string) (s string, present bool, err error) {
	switch rawjson.Kind(v) {
	case 0, 'n':
		return "", false, nil
	case '"':
		s, ok := rawjson.Str(v)
		if !ok {
			return "", false, inErr(protocol.CodeInvalidJSON, path, "bad string", nil)
		}
		return s, true, nil
	}
	return "", false, inErr(protocol.CodeWrongType, path, "want a string, got "+rawjson.KindName(v), nil)
}
