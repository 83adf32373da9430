package clowl

import "github.com/clutchprotocol/clutch/adapters/internal/rawjson"

// wantString reads an optional string member (rawjson.OptString), as an
// *adapters.Error at path when it is not one.
func wantString(v []byte, path string) (s string, present bool, err error) {
	s, present, code, detail := rawjson.OptString(v)
	if code != "" {
		return "", false, inErr(code, path, detail, nil)
	}
	return s, present, nil
}
