package protocol

import (
	"testing"
	"unicode/utf8"
)

// writer.str tests 8 bytes at a time; it must write what a byte-at-a-time
// encoder writes for every byte value at every position of a word, in
// strings whose length puts a tail after the words, and on random strings.
func TestStrMatchesByteAtATime(t *testing.T) {
	ref := func(s string) (string, bool) {
		b := []byte{'"'}
		for i := 0; i < len(s); {
			c := s[i]
			switch {
			case plainASCII[c]:
				b = append(b, c)
			case c >= utf8.RuneSelf:
				r, size := utf8.DecodeRuneInString(s[i:])
				if r == utf8.RuneError && size == 1 {
					return "", false
				}
				b = append(b, s[i:i+size]...)
				i += size
				continue
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, `\n`...)
			case c == '\r':
				b = append(b, `\r`...)
			case c == '\t':
				b = append(b, `\t`...)
			case c == '\b':
				b = append(b, `\b`...)
			case c == '\f':
				b = append(b, `\f`...)
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
		}
		return string(append(b, '"')), true
	}
	check := func(s string) {
		var w writer
		b := w.str(nil, s)
		want, ok := ref(s)
		if ok != (w.err == nil) || ok && string(b) != want {
			t.Fatalf("str(%q) = %s (err %v), want %s (valid %v)", s, b, w.err, want, ok)
		}
	}
	for _, n := range []int{3, 8, 11, 16, 19} {
		for pos := range n { // in the words and in the tail after them
			for c := range 256 {
				w := []byte("abcdefghijklmnopqrs"[:n])
				w[pos] = byte(c)
				check(string(w))
				w[(pos+3)%n] = 0x21 // a neighbour just past '"' - 1 and ' '
				check(string(w))
			}
		}
	}
	r := seededRand(t, 5, 6)
	for range 200000 {
		w := make([]byte, r.IntN(40))
		for i := range w {
			w[i] = byte(r.IntN(256))
			if r.IntN(3) > 0 {
				w[i] = byte(0x1e + r.IntN(0x62)) // mostly printable, around the edges
			}
		}
		check(string(w))
	}
}
