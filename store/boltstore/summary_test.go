package boltstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
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

// TestSummariesOfAnOlderVersion: summary records and task states written
// before titles, agents, failures and waiting tasks were summarized
// (record version 1) read as summaries without them, with no error; the
// events appended after fold into them as usual.
func TestSummariesOfAnOlderVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path, &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ids := protocol.NewIDs(nil)
	req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	req.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
	req.Payload = json.RawMessage(`{"text":"Compare the rails"}`)
	acc := ids.Reply(req, protocol.TypeTaskAccept, "agent:ken")
	ask := ids.Reply(req, protocol.TypeTaskQuestion, "agent:ken")
	ask.Payload = json.RawMessage(`{"question_id":"q","index":0,"text":"Which?"}`)
	if _, err := s.Append(t.Context(), req, acc, ask); err != nil {
		t.Fatal(err)
	}
	if r := listT(t, s.Runs(t.Context(), store.ListQuery{})); len(r) != 1 || r[0].Title == "" || r[0].Waiting != 1 || len(r[0].Agents) != 1 {
		t.Fatalf("before: %+v", r)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	downgradeSummaries(t, path)

	s, err = Open(path, &Options{NoSync: true})
	if err != nil {
		t.Fatalf("Open of a file with version 1 summaries: %v", err)
	}
	defer s.Close()
	want := store.Summary{ID: req.RunID, RunID: req.RunID, Owner: "agent:ui", Events: 3, Tasks: 1, Status: store.StatusRunning}
	r := listT(t, s.Runs(t.Context(), store.ListQuery{}))
	if len(r) != 1 {
		t.Fatalf("runs: %+v", r)
	}
	got := r[0]
	got.FirstSeq, got.LastSeq, got.Created, got.Updated = 0, 0, time.Time{}, time.Time{}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("a version 1 summary (-want +got):\n%s", diff)
	}
	// The question was asked before: its task state has no waiting flag,
	// so the answer counts nothing; a failure and a new agent count.
	ans := ids.Reply(req, protocol.TypeTaskAnswer, "agent:ui")
	ans.Payload = json.RawMessage(`{"question_id":"q","value":"x"}`)
	acc2 := ids.Reply(req, protocol.TypeTaskAccept, "agent:ada")
	acc2.Attempt = 2
	fail := ids.Reply(req, protocol.TypeTaskError, "agent:ada")
	fail.Attempt, fail.Payload = 2, json.RawMessage(`{"code":"TOOL_FAILED","message":"no","retryable":false}`)
	if _, err := s.Append(t.Context(), ans, acc2, fail); err != nil {
		t.Fatal(err)
	}
	r = listT(t, s.Runs(t.Context(), store.ListQuery{}))
	if len(r) != 1 || r[0].Waiting != 0 || !slices.Equal(r[0].Agents, []string{"agent:ada"}) || r[0].Title != "" ||
		r[0].Failure == nil || r[0].Failure.Code != protocol.CodeToolFailed || r[0].Status != store.StatusFailed || r[0].Events != 6 {
		t.Fatalf("after more events: %+v", r)
	}
	if err := s.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// downgradeSummaries rewrites the summaries and task states of the file
// at path as a version without titles, agents, failures and waiting tasks
// wrote them.
func downgradeSummaries(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketSumRun, bucketSumThread} {
			b := tx.Bucket(name)
			old := map[string][]byte{}
			err := b.ForEach(func(k, v []byte) error {
				s, err := parseSummary(string(k), v)
				if err != nil {
					return err
				}
				s.Title, s.Waiting, s.Agents, s.Failure, s.Bytes = "", 0, nil, nil, 0
				rec := appendSummary(nil, &s)
				rec = rec[:len(rec)-5] // no title, waiting, agents, failure, bytes: one byte each
				rec[0] = 1
				old[string(k)] = rec
				return nil
			})
			if err != nil {
				return err
			}
			for k, v := range old {
				if err := b.Put([]byte(k), v); err != nil {
					return err
				}
			}
		}
		b := tx.Bucket(bucketSumTask)
		old := map[string][]byte{}
		err := b.ForEach(func(k, v []byte) error {
			st, err := parseTaskState(v)
			if err != nil {
				return err
			}
			if st.Waiting {
				st = driver.TaskState{}
			}
			old[string(k)] = appendTaskState(nil, st)
			return nil
		})
		if err != nil {
			return err
		}
		for k, v := range old {
			if err := b.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// v2Record is the record of s as a version that did not count bytes
// wrote it.
func v2Record(s *store.Summary) []byte {
	c := *s
	c.Bytes = 0
	rec := appendSummary(nil, &c)
	rec = rec[:len(rec)-1] // Bytes 0: one byte
	rec[0] = 2
	return rec
}

// uncountBytes turns the summaries of the file at path into those of a
// version that did not count bytes: version 2 records, no
// "summarized.bytes".
func uncountBytes(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketSumRun, bucketSumThread} {
			b := tx.Bucket(name)
			old := map[string][]byte{}
			err := b.ForEach(func(k, v []byte) error {
				s, err := parseSummary(string(k), v)
				old[string(k)] = v2Record(&s)
				return err
			})
			if err != nil {
				return err
			}
			for k, v := range old {
				if err := b.Put([]byte(k), v); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(bucketMeta).Delete(keySummaryBytes)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSummaryBytesCountedForOlderFiles: a file whose summaries were
// written before they counted bytes lists them with Bytes 0 read-only;
// opened for writing, it gets every run's and thread's Bytes counted from
// its events through the watermark, and the events after it (a crash
// before the last flush) fold on top: the summaries equal the ones kept
// while appending, whose Bytes are the sums of their events' stored
// lengths. The next open counts nothing again.
func TestSummaryBytesCountedForOlderFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	msgs := storetest.BenchMessages(t, 600, 5)
	appendHalf := func(half int) {
		s, err := Open(path, &Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, run := range msgs {
			part := run[:len(run)/2]
			if half == 1 {
				part = run[len(run)/2:]
			}
			if _, err := s.Append(t.Context(), part...); err != nil {
				t.Fatal(err)
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
	runs := listT(t, s.Runs(t.Context(), store.ListQuery{}))
	threads := listT(t, s.Threads(t.Context(), store.ListQuery{}))
	if len(runs) != 5 {
		t.Fatalf("runs: %+v", runs)
	}
	for _, sum := range runs {
		var n int64
		for ev, err := range s.Read(t.Context(), store.Query{RunID: sum.ID}) {
			if err != nil {
				t.Fatal(err)
			}
			n += int64(len(ev.Raw))
		}
		if sum.Bytes != n || n == 0 {
			t.Fatalf("run %s: Bytes %d, its events' bytes %d", sum.ID, sum.Bytes, n)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	uncountBytes(t, path)
	ro, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, sum := range listT(t, ro.Runs(t.Context(), store.ListQuery{})) {
		if sum.Bytes != 0 {
			t.Fatalf("read-only, an uncounted summary: %+v", sum)
		}
	}
	ro.Close()

	restoreSummaries(t, path, saved) // the watermark halfway
	uncountBytes(t, path)
	for range 2 { // counted, then read as counted
		s, err = Open(path, &Options{NoSync: true})
		if err != nil {
			t.Fatalf("Open of a file whose summaries count no bytes: %v", err)
		}
		if diff := cmp.Diff(runs, listT(t, s.Runs(t.Context(), store.ListQuery{}))); diff != "" {
			t.Fatalf("runs counted on open (-kept +counted):\n%s", diff)
		}
		if diff := cmp.Diff(threads, listT(t, s.Threads(t.Context(), store.ListQuery{}))); diff != "" {
			t.Fatalf("threads counted on open (-kept +counted):\n%s", diff)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// sampleSummary has every field of a summary record set.
func sampleSummary() store.Summary {
	return store.Summary{
		ID: "run_1", RunID: "run_1", Owner: "agent:ui", Channel: "ops", Title: "Compare the rails…",
		FirstSeq: 3, LastSeq: 90, Created: time.Unix(0, 1700000000123456789).UTC(), Updated: time.Unix(0, 1700000001000000000).UTC(),
		Events: 40, Bytes: 61234, Tasks: 5, Ended: 4, Waiting: 1, Status: store.StatusRunning,
		Agents:  []string{"agent:ken", "agent:ada", ""},
		Failure: &store.Failure{TaskID: "task_1", AgentID: "agent:ken", Code: protocol.CodeToolFailed, Message: "é"},
	}
}

// A summary record keeps every field, with and without a failure.
func TestSummaryRecordRoundTrip(t *testing.T) {
	for _, s := range []store.Summary{sampleSummary(), {ID: "thr_1", RunID: "run_1", FirstSeq: 1, LastSeq: 1, Created: time.Unix(0, 0).UTC(), Updated: time.Unix(0, 0).UTC(), Status: store.StatusActive}} {
		rec := appendSummary(nil, &s)
		if len(rec) > summarySize(&s) {
			t.Fatalf("%d bytes, summarySize %d", len(rec), summarySize(&s))
		}
		got, err := parseSummary(s.ID, rec)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(s, got); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	}
}

// FuzzParseSummary: whatever the bytes of a summary value, parseSummary
// returns a summary or a *CorruptError, never panics; a summary it
// accepts writes back to a record that reads as the same summary.
func FuzzParseSummary(f *testing.F) {
	s := sampleSummary()
	good := appendSummary(nil, &s)
	f.Add(good)
	f.Add(good[:len(good)-3])
	s.Failure = nil
	f.Add(appendSummary(nil, &s))
	f.Add(v2Record(&s))
	s.Title, s.Waiting, s.Agents, s.Bytes = "", 0, nil, 0
	v1 := appendSummary(nil, &s)
	v1 = v1[:len(v1)-5]
	v1[0] = 1
	f.Add(v1)
	f.Add(append(bytes.Clone(good[:len(good)-3]), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)) // Bytes past MaxInt64
	f.Add([]byte{})
	f.Add([]byte{3})
	f.Fuzz(func(t *testing.T, v []byte) {
		s, err := parseSummary("run_1", v)
		if err != nil {
			if _, ok := err.(*CorruptError); !ok {
				t.Fatalf("error %T %v, want a *CorruptError", err, err)
			}
			return
		}
		again, err := parseSummary("run_1", appendSummary(nil, &s))
		if err != nil {
			t.Fatalf("the record of an accepted summary: %v", err)
		}
		if diff := cmp.Diff(s, again); diff != "" {
			t.Fatalf("written back (-read +again):\n%s", diff)
		}
	})
}
