package memstore

import (
	"math/rand/v2"
	"testing"
)

// The table against a Go map, through several growths, with fingerprints
// that share their low or high bits and with consecutive ones, so that
// probing runs long.
func TestHashTableAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for name, gen := range map[string]func(i int) uint32{
		"random":          func(int) uint32 { return r.Uint32() },
		"same low bits":   func(int) uint32 { return r.Uint32()<<5 | 7 },
		"consecutive":     func(i int) uint32 { return uint32(i) },
		"high bits equal": func(i int) uint32 { return uint32(i) | 0xff<<24 },
	} {
		t.Run(name, func(t *testing.T) {
			var tab hashTable
			want := map[uint32]uint32{}
			for i := range 50000 {
				h := gen(i)
				if _, dup := want[h]; dup {
					continue
				}
				if got := tab.get(h); got != 0 {
					t.Fatalf("get(%x) = %d before put", h, got)
				}
				v := uint32(i + 1)
				tab.put(h, v)
				want[h] = v
			}
			for h, v := range want {
				if got := tab.get(h); got != v {
					t.Fatalf("get(%x) = %d, want %d", h, got, v)
				}
			}
			if tab.n != len(want) || tab.n*2 > len(tab.slots) {
				t.Fatalf("%d entries in %d slots, want %d", tab.n, len(tab.slots), len(want))
			}
			var empty hashTable
			if empty.get(1) != 0 {
				t.Fatal("an empty table found something")
			}
		})
	}
}
