package memstore

import (
	"math/rand/v2"
	"testing"
)

// The table against a Go map, through several growths, with hashes that
// share their low bits (as the keys of one shard do) and with clustered
// hashes, so that probing runs long.
func TestHashTableAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for name, gen := range map[string]func(i int) uint64{
		"random":          func(int) uint64 { return r.Uint64() },
		"same low bits":   func(int) uint64 { return r.Uint64()<<5 | 7 },
		"consecutive":     func(i int) uint64 { return uint64(i) },
		"high bits equal": func(i int) uint64 { return uint64(i) | 0xffff<<48 },
	} {
		t.Run(name, func(t *testing.T) {
			var tab hashTable
			want := map[uint64]uint64{}
			for i := range 50000 {
				h := gen(i)
				if _, dup := want[h]; dup {
					continue
				}
				if got := tab.get(h); got != 0 {
					t.Fatalf("get(%x) = %d before put", h, got)
				}
				v := uint64(i + 1)
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
