package ringmap

import (
	"strconv"
	"sync"
	"testing"
)

func TestEvictsOldest(t *testing.T) {
	m := New[int](2)
	m.Put("a", 1)
	m.Put("b", 2)
	m.Put("a", 10) // an update is not a new key
	m.Put("c", 3)  // evicts a, the oldest key
	if _, ok := m.Get("a"); ok {
		t.Fatal("a survived eviction")
	}
	if v, ok := m.Get("b"); !ok || v != 2 {
		t.Fatalf("b = %v, %v", v, ok)
	}
	if v, ok := m.Get("c"); !ok || v != 3 {
		t.Fatalf("c = %v, %v", v, ok)
	}
}

func TestConcurrent(t *testing.T) {
	m := New[int](100)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				k := strconv.Itoa(g*1000 + i)
				m.Put(k, i)
				m.Get(k)
			}
		}()
	}
	wg.Wait()
	n := 0
	for i := range 4000 {
		if _, ok := m.Get(strconv.Itoa(i)); ok {
			n++
		}
	}
	if n != 100 {
		t.Fatalf("%d keys remembered, want 100", n)
	}
}
