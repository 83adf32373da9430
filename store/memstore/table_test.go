package memstore

import (
	"hash/maphash"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// Keys whose hashes collide — fully, or in their part and slot — are told
// apart by eq, and every key is found after any number of growths.
func TestTableCollisions(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var tb table
	keys := map[uint64]string{} // number → key
	hashOf := map[string]uint64{}
	eqTo := func(key string) func(uint64) bool {
		return func(v uint64) bool { return keys[v] == key }
	}
	for i := range 20000 {
		key := "k" + strconv.Itoa(i)
		var h uint64
		switch i % 4 {
		case 0: // the same full hash as an earlier key
			if i > 0 {
				h = hashOf["k"+strconv.Itoa(rng.IntN(i))]
				break
			}
			fallthrough
		case 1: // the same part and low bits as an earlier key's
			h = uint64(rng.Int64()) | 1
			if i > 0 {
				o := hashOf["k"+strconv.Itoa(rng.IntN(i))]
				h = o&(0xff<<56|0xff) | h&^(0xff<<56|0xff)
			}
		default:
			h = hash(maphash.MakeSeed(), key)
		}
		if _, ok := tb.find(h, eqTo(key)); ok {
			t.Fatalf("%s found before it was added", key)
		}
		v := uint64(i) + 1
		keys[v], hashOf[key] = key, h
		tb.put(h, v)
	}
	for v, key := range keys {
		got, ok := tb.find(hashOf[key], eqTo(key))
		if !ok || got != v {
			t.Fatalf("find(%s) = %d, %v; want %d", key, got, ok, v)
		}
	}
	n := 0
	tb.each(func(v uint64) {
		if _, ok := keys[v]; !ok {
			t.Fatalf("each gave %d, never added", v)
		}
		n++
	})
	if n != len(keys) {
		t.Fatalf("each gave %d numbers, want %d", n, len(keys))
	}
	for i := range tb.parts {
		p := &tb.parts[i]
		if 2*p.n > len(p.slots) {
			t.Fatalf("part %d: %d of %d slots used, more than half", i, p.n, len(p.slots))
		}
	}
}

// touch reads without the lock, and makes the slots of coming growths,
// while puts and growths change the table under it (run with -race); every
// key is found afterwards.
func TestTableTouchWhileGrowing(t *testing.T) {
	var (
		tb   table
		mu   sync.Mutex
		wg   sync.WaitGroup
		stop atomic.Bool
	)
	const n = 200000 // parts large enough for prepare
	seed := maphash.MakeSeed()
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = hash(seed, strconv.Itoa(i))
	}
	for g := range 2 {
		wg.Go(func() {
			for i := g; !stop.Load(); i += 7 {
				tb.touch(keys[i%n])
			}
		})
	}
	for i, h := range keys {
		mu.Lock()
		tb.put(h, uint64(i))
		mu.Unlock()
	}
	stop.Store(true)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	prepared := 0
	for i := range tb.parts {
		if len(tb.parts[i].slots) > prepareFrom {
			prepared++
		}
	}
	if prepared == 0 {
		t.Fatalf("no part grew past %d slots: prepare was not exercised", prepareFrom)
	}
	for i, h := range keys {
		if v, ok := tb.find(h, func(v uint64) bool { return v == uint64(i) }); !ok || v != uint64(i) {
			t.Fatalf("key %d: find = %d, %v", i, v, ok)
		}
	}
	tb.reset()
	if _, ok := tb.find(keys[1], func(uint64) bool { return true }); ok {
		t.Fatal("found a key after reset")
	}
}
