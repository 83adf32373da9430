package protocol

import (
	"testing"
)

// TestSkipPlainWords: the word-at-a-time skip stops where a byte-at-a-time
// loop over plainASCII would, for every byte value at every position
// around the words, and for random bytes.
func TestSkipPlainWords(t *testing.T) {
	check := func(d []byte, from int) {
		got := skipPlainWords(d, from)
		want := from
		for want < len(d) && plainASCII[d[want]] {
			want++
		}
		// The skip may stop early only in the last 7 bytes, after plain ones.
		if got != want && !(got < want && got+8 > len(d) && got >= from) {
			t.Fatalf("skipPlainWords(%q, %d) = %d; the first byte that is not plain is at %d", d, from, got, want)
		}
	}
	for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 23} {
		for pos := range n {
			for c := range 256 {
				s := []byte("abcdefghijklmnopqrstuvwxyz"[:n])
				s[pos] = byte(c)
				for from := range min(n, 3) {
					check(s, from)
				}
			}
		}
	}
	r := seededRand(t, 11, 3)
	for range 100000 {
		s := make([]byte, r.IntN(40))
		for i := range s {
			if r.IntN(8) == 0 {
				s[i] = byte(r.IntN(256))
			} else {
				s[i] = byte(0x20 + r.IntN(0x60))
			}
		}
		check(s, r.IntN(len(s)+1))
	}
}
