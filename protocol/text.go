package protocol

import (
	"slices"
	"strings"
	"unicode"
)

// PayloadText returns the text a payload is about, for a title or a
// preview: the payload itself when it is a JSON string, else the value of
// the first of names (first in names, wherever it stands in the object)
// that is a member of the payload, a JSON object, with a string value.
// Blank strings (nothing but white space) do not count. It returns "" when
// there is no such text, and for a payload that is not strict JSON (the
// rules of [Decode], at its default depth). The text is a copy: it does
// not share the payload's memory.
func PayloadText(payload []byte, names ...string) string {
	// Borrowed strings: keys are only compared, and the text is copied
	// before it is returned.
	sc := scanner{data: payload, maxDepth: DefaultMaxDepth, borrow: true}
	best := len(names)
	var text string
	switch sc.peek() {
	case '"':
		s, err := sc.str()
		if err != nil {
			return ""
		}
		text, best = s, -1
	case '{':
		err := sc.object(func(k string) *Error {
			i := slices.Index(names[:best], k)
			if i < 0 || sc.peek() != '"' {
				_, _, err := sc.skip(1)
				return err
			}
			s, err := sc.str()
			if err == nil && !blank(s) {
				text, best = s, i
			}
			return err
		})
		if err != nil {
			return ""
		}
	default:
		return ""
	}
	if sc.peek() != 0 || sc.pos < len(sc.data) || blank(text) {
		return "" // data after the value, or a blank string payload
	}
	return strings.Clone(text)
}

// blank reports whether s holds nothing but white space.
func blank(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) }) < 0
}
