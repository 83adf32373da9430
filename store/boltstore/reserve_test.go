package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/storetest"
)

// The reserve writes zeros past bbolt's pages between the commits of
// appends, index flushes and artifacts: with tiny pieces it writes between
// most of them. Nothing they wrote may be lost to a zero: Check passes,
// and every event and artifact reads back, before and after a reopen.
func TestReserveKeepsOffCommits(t *testing.T) {
	defer func(p, a, m int64) { reservePiece, reserveAhead, reserveMin = p, a, m }(reservePiece, reserveAhead, reserveMin)
	reservePiece, reserveAhead, reserveMin = 16<<10, 256<<10, 256<<10

	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path, &Options{IndexBatch: 300, PageSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if s.res == nil {
		t.Fatal("no reserve")
	}
	ctx := context.Background()
	work := storetest.BenchMessages(t, 3000, 16)
	var wg sync.WaitGroup
	for _, msgs := range work {
		wg.Go(func() {
			for _, m := range msgs {
				if _, err := s.Append(ctx, m); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	arts := make(map[string][]byte)
	var amu sync.Mutex
	for a := range 4 {
		wg.Go(func() {
			for i := range 10 {
				// Artifacts from 1 KiB to 1 MiB: some fit below the
				// zeros, some reach past them.
				data := bytes.Repeat([]byte{byte(a), byte(i)}, 512<<(i%11))
				ref, err := s.PutArtifact(ctx, "application/octet-stream", data)
				if err != nil {
					t.Error(err)
					return
				}
				amu.Lock()
				arts[ref] = data
				amu.Unlock()
			}
		})
	}
	wg.Wait()
	check := func(s *Store) {
		t.Helper()
		if err := s.Check(ctx); err != nil {
			t.Fatal(err)
		}
		n := 0
		for ev, err := range s.Read(ctx, store.Query{}) {
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ev.Message(); err != nil {
				t.Fatalf("event %d: %v", ev.Seq, err)
			}
			n++
		}
		if n != 3000 {
			t.Fatalf("read %d events, want 3000", n)
		}
		for ref, data := range arts {
			a, err := s.GetArtifact(ctx, ref)
			if err != nil || !bytes.Equal(a.Data, data) {
				t.Fatalf("artifact %s: %v", ref, err)
			}
		}
	}
	check(s)
	s.res.mu.Lock()
	zeroEnd := s.res.zeroEnd
	s.res.mu.Unlock()
	hwm, err := s.hwm()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pages in use %d KiB, zeros to %d KiB, file %d KiB", hwm>>10, zeroEnd>>10, fi.Size()>>10)
	if zeroEnd <= hwm || fi.Size() < zeroEnd {
		t.Fatalf("no zeros past the pages in use: pages end at %d, zeros at %d, file %d", hwm, zeroEnd, fi.Size())
	}
	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(s)
}

// A store with NoSync, or read-only, keeps no reserve: the zeros only
// pay for fsyncs.
func TestReserveOnlyWithSync(t *testing.T) {
	dir := t.TempDir()
	for i, o := range []*Options{{NoSync: true}, {ReadOnly: true}} {
		path := filepath.Join(dir, fmt.Sprint(i, ".db"))
		if o.ReadOnly {
			path = filepath.Join(dir, "0.db")
		}
		s, err := Open(path, o)
		if err != nil {
			t.Fatal(err)
		}
		if s.res != nil {
			t.Errorf("options %+v: a reserve", *o)
		}
		s.Close()
	}
}
