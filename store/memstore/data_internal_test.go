package memstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// Events of every size, from many goroutines, through small chunks, large
// ones, spares and events larger than a chunk, read back byte for byte.
func TestEventBytesInChunks(t *testing.T) {
	s := openStore(t, &Options{MaxEventSize: 4 << 20})
	ctx := context.Background()
	ids := protocol.NewIDs(nil)
	sizes := []int{10, 3000, 100, dataChunkMax + 5000, 700, 50000, 2 * dataChunkMax, 1}
	want := map[uint64][]byte{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				m := ids.NewMessage(protocol.TypeChatMessage, "agent:a")
				m.Meta = map[string]any{"pad": strings.Repeat("x", sizes[(g+i)%len(sizes)])}
				res, err := s.Append(ctx, m)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want[res[0].Seq] = m.Raw()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if !s.big.Load() {
		t.Fatal("chunks never reached their largest size")
	}
	n := 0
	for ev, err := range s.Read(ctx, store.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ev.Raw, want[ev.Seq]) {
			t.Fatalf("event %d: bytes differ from those appended", ev.Seq)
		}
		if cap(ev.Raw) != len(ev.Raw) {
			t.Fatalf("event %d: Raw has room past its end (cap %d, len %d): an append would write into the next event", ev.Seq, cap(ev.Raw), len(ev.Raw))
		}
		n++
	}
	if n != len(want) {
		t.Fatalf("read %d events, appended %d", n, len(want))
	}
}

// A duplicate costs no bytes: the copy is made after the dedup check.
func TestDuplicateKeepsNoBytes(t *testing.T) {
	s := openStore(t, nil)
	ctx := context.Background()
	m := protocol.NewIDs(nil).NewMessage(protocol.TypeChatMessage, "agent:a")
	if _, err := s.Append(ctx, m); err != nil {
		t.Fatal(err)
	}
	used := len(s.data[len(s.data)-1])
	for range 10 {
		if res, err := s.Append(ctx, m); err != nil || !res[0].Duplicate {
			t.Fatalf("%v %v", res, err)
		}
	}
	if got := len(s.data[len(s.data)-1]); got != used {
		t.Fatalf("duplicates took %d bytes", got-used)
	}
}

// Types are numbered once each, also past the lock-free map's size, and
// past the last number Append fails with ErrTooLarge.
func TestEventTypes(t *testing.T) {
	s := openStore(t, nil)
	for i := range maxFastTypes + 50 {
		typ := protocol.Type(fmt.Sprintf("x.acme.t%d", i))
		a, err := s.typeNum(typ)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := s.typeNum(typ); a != b || s.typeName(a) != typ {
			t.Fatalf("%s: numbered %d then %d, named %s", typ, a, b, s.typeName(a))
		}
	}
	if n := len(*s.fastTypes.Load()); n != maxFastTypes {
		t.Fatalf("lock-free map holds %d types, want %d", n, maxFastTypes)
	}
	defer func(n uint64) { maxTypes = n }(maxTypes)
	maxTypes = uint64(len(*s.typeNames.Load())) // as if every number were taken
	ctx := context.Background()
	m := protocol.NewIDs(nil).NewMessage("x.acme.new", "agent:a")
	if _, err := s.Append(ctx, m); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("a new type past the limit: %v", err)
	}
	known := protocol.NewIDs(nil).NewMessage("x.acme.t3", "agent:a")
	if _, err := s.Append(ctx, known); err != nil {
		t.Fatalf("a known type: %v", err)
	}
}

// A list that passes its inline seqs grows its first chunk by doubling
// (most stay short), later chunks are whole; every seq reads back in order.
func TestPostingsGrowth(t *testing.T) {
	var p postings
	for n := 1; n <= postingsInline+3*postingsChunk+7; n++ {
		p.add(uint64(n * 3))
		if n == postingsInline+1 && cap(p.more[0]) != postingsFirst {
			t.Fatalf("first chunk of a list of %d has room for %d, want %d", n, cap(p.more[0]), postingsFirst)
		}
		if n%97 == 0 || n > postingsInline+3*postingsChunk {
			for i := range p.n {
				if got := p.at(i); got != uint64((i+1)*3) {
					t.Fatalf("list of %d: at(%d) = %d, want %d", n, i, got, (i+1)*3)
				}
			}
		}
	}
	if len(p.more) != 4 || cap(p.more[1]) != postingsChunk {
		t.Fatalf("%d chunks, the second with room for %d", len(p.more), cap(p.more[1]))
	}
}
