package boltstore

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/storetest"
)

func listT(t *testing.T, seq func(func(store.Summary, error) bool)) []store.Summary {
	t.Helper()
	var out []store.Summary
	for s, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// stripSummaries turns the file at path into one written before
// summaries existed: no summary buckets, no watermark.
func stripSummaries(t *testing.T, path string, keep ...[]byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
	next:
		for _, name := range sumBuckets {
			for _, k := range keep {
				if string(k) == string(name) {
					continue next
				}
			}
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Delete(keySummarized)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSummariesBuiltForOlderFiles: a file without summaries (an older
// version's) opens, gets them built from its events, several
// transactions' worth, equal to the ones kept while appending; and a file
// with only a part of them is refused as damaged.
func TestSummariesBuiltForOlderFiles(t *testing.T) {
	defer func(n int) { summarizeBatch = n }(summarizeBatch)
	summarizeBatch = 97
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path, &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range storetest.BenchMessages(t, 1000, 7) {
		for i := 0; i < len(run); i += 10 {
			if _, err := s.Append(t.Context(), run[i:min(i+10, len(run))]...); err != nil {
				t.Fatal(err)
			}
		}
	}
	runs := listT(t, s.Runs(t.Context(), store.ListQuery{}))
	threads := listT(t, s.Threads(t.Context(), store.ListQuery{}))
	if len(runs) != 7 || runs[0].Tasks == 0 {
		t.Fatalf("runs: %+v", runs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	stripSummaries(t, path)

	s, err = Open(path, &Options{NoSync: true})
	if err != nil {
		t.Fatalf("Open of a file without summaries: %v", err)
	}
	if diff := cmp.Diff(runs, listT(t, s.Runs(t.Context(), store.ListQuery{}))); diff != "" {
		t.Fatalf("runs built on open (-kept +built):\n%s", diff)
	}
	if diff := cmp.Diff(threads, listT(t, s.Threads(t.Context(), store.ListQuery{}))); diff != "" {
		t.Fatalf("threads built on open (-kept +built):\n%s", diff)
	}
	if err := s.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	stripSummaries(t, path, bucketSumRun)
	if _, err := Open(path, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a file with a part of the summaries: %v, want ErrCorrupt", err)
	}
}

// saveSummaries copies the summary buckets and watermark of the file.
func saveSummaries(t *testing.T, path string) map[string]map[string][]byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]map[string][]byte{}
	err = db.View(func(tx *bolt.Tx) error {
		for _, name := range sumBuckets {
			m := map[string][]byte{}
			tx.Bucket(name).ForEach(func(k, v []byte) error { m[string(k)] = bytes.Clone(v); return nil })
			out[string(name)] = m
		}
		out["meta"] = map[string][]byte{string(keySummarized): bytes.Clone(tx.Bucket(bucketMeta).Get(keySummarized))}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func restoreSummaries(t *testing.T, path string, saved map[string]map[string][]byte) {
	t.Helper()
	stripSummaries(t, path)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range sumBuckets {
			b, err := tx.CreateBucket(name)
			if err != nil {
				return err
			}
			for k, v := range saved[string(name)] {
				if err := b.Put([]byte(k), v); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(bucketMeta).Put(keySummarized, saved["meta"][string(keySummarized)])
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSummariesCatchUp: events appended by a version that kept no
// summaries leave the watermark behind the last event; Open folds the
// rest in, and the result equals summaries kept all along.
func TestSummariesCatchUp(t *testing.T) {
	defer func(n int) { summarizeBatch = n }(summarizeBatch)
	summarizeBatch = 50
	path := filepath.Join(t.TempDir(), "events.db")
	runs := storetest.BenchMessages(t, 600, 3)
	appendHalf := func(half int) {
		s, err := Open(path, &Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, run := range runs {
			part := run[:len(run)/2]
			if half == 1 {
				part = run[len(run)/2:]
			}
			for _, m := range part {
				if _, err := s.Append(t.Context(), m); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	appendHalf(0)
	saved := saveSummaries(t, path)
	appendHalf(1)
	s, err := Open(path, &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	want := listT(t, s.Runs(t.Context(), store.ListQuery{}))
	s.Close()
	restoreSummaries(t, path, saved)
	if got := saveSummaries(t, path)["meta"][string(keySummarized)]; string(got) != string(seqKey(300)) {
		t.Fatalf("watermark restored to %x", got)
	}
	s, err = Open(path, &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if diff := cmp.Diff(want, listT(t, s.Runs(t.Context(), store.ListQuery{}))); diff != "" {
		t.Fatalf("runs after catching up (-kept +caught up):\n%s", diff)
	}
}
