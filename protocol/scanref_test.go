package protocol

import (
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// refStrRange consumes a string starting at the opening quote and returns the
// range of its content and whether it holds escapes.
func (sc *scanner) refStrRange() (a, b int, esc bool, e *Error) {
	sc.pos++ // opening quote
	a = sc.pos
	d := sc.data
	for i := sc.pos; i < len(d); {
		c := d[i]
		if plainASCII[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			sc.pos = i + 1
			return a, i, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(d) {
				sc.pos = i
				return 0, 0, false, sc.err(CodeInvalidJSON, "unterminated string")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(d, i+2)
				if !ok {
					sc.pos = i
					return 0, 0, false, sc.err(CodeInvalidJSON, "invalid \\u escape")
				}
				i += 6
				if utf16.IsSurrogate(r) {
					// A high surrogate must be followed by an escaped low one.
					r2, ok2 := rune(0), false
					if r < 0xDC00 && i+1 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
						r2, ok2 = hex4(d, i+2)
					}
					if !ok2 || r2 < 0xDC00 || r2 > 0xDFFF {
						sc.pos = i - 6
						return 0, 0, false, sc.err(CodeInvalidUTF8, "lone surrogate in \\u escape")
					}
					i += 6
				}
			default:
				sc.pos = i
				return 0, 0, false, sc.err(CodeInvalidJSON, "invalid escape \\%c", d[i+1])
			}
		case c < 0x20:
			sc.pos = i
			return 0, 0, false, sc.err(CodeInvalidJSON, "control character in string")
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				sc.pos = i
				return 0, 0, false, sc.err(CodeInvalidUTF8, "invalid UTF-8 in string")
			}
			i += size
		}
	}
	sc.pos = len(d)
	return 0, 0, false, sc.err(CodeInvalidJSON, "unterminated string")
}

// TestStrRangeMatchesByteAtATime: strRange, which skips plain bytes 8 at a
// time, reads every string as the byte-at-a-time reference does (same
// range, escapes, error and position), for every byte value at every
// position around the words, and for random strings.
func TestStrRangeMatchesByteAtATime(t *testing.T) {
	check := func(data []byte) {
		a, b := scanner{data: data}, scanner{data: data}
		a1, b1, e1, err1 := a.strRange()
		a2, b2, e2, err2 := b.refStrRange()
		if a1 != a2 || b1 != b2 || e1 != e2 || a.pos != b.pos || !sameError(asError(err1), asError(err2)) {
			t.Fatalf("strRange(%q) = %d %d %v %v pos %d; reference %d %d %v %v pos %d", data, a1, b1, e1, err1, a.pos, a2, b2, e2, err2, b.pos)
		}
	}
	for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 23} {
		for pos := range n {
			for c := range 256 {
				s := []byte(`"abcdefghijklmnopqrstuvwxyz`[:n+1])
				s[1+pos] = byte(c)
				check(s)                       // unterminated
				check(append(s, '"'))          // closed
				check(append(s, `\u00e9"`...)) // an escape after
			}
		}
	}
	r := seededRand(t, 11, 3)
	for range 100000 {
		s := make([]byte, 1+r.IntN(40))
		s[0] = '"'
		for i := 1; i < len(s); i++ {
			switch r.IntN(12) {
			case 0:
				s[i] = byte(r.IntN(256))
			case 1:
				s[i] = '\\'
			case 2:
				s[i] = '"'
			default:
				s[i] = byte(0x20 + r.IntN(0x60))
			}
		}
		check(s)
	}
}

// asError keeps a nil *Error nil as an error.
func asError(e *Error) error {
	if e == nil {
		return nil
	}
	return e
}
