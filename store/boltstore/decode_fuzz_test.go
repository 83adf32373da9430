package boltstore

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
)

// FuzzParseTombstone: whatever the bytes of a tombstone value,
// parseTombstone returns a tombstone or a *CorruptError, never panics; a
// tombstone it accepts writes back to a record that reads as the same.
func FuzzParseTombstone(f *testing.F) {
	ts := store.Tombstone{RunID: "run_1", Removed: time.Unix(1_800_000_000, 5).UTC(), Policy: "max_age", Note: "older than 720h",
		Archive: "archive/run_1.jsonl", Events: 12, FirstSeq: 3, LastSeq: 40, Bytes: 9120}
	good := appendTombstone(nil, &ts)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(append(append([]byte{}, good...), 0))
	ts.Policy, ts.Note, ts.Archive = "", "", ""
	f.Add(appendTombstone(nil, &ts))
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add([]byte{2, 0})
	f.Fuzz(func(t *testing.T, v []byte) {
		got, err := parseTombstone("run_1", v)
		if err != nil {
			if _, ok := err.(*CorruptError); !ok {
				t.Fatalf("error %T %v, want a *CorruptError", err, err)
			}
			return
		}
		again, err := parseTombstone("run_1", appendTombstone(nil, &got))
		if err != nil {
			t.Fatalf("the record of an accepted tombstone: %v", err)
		}
		if diff := cmp.Diff(got, again); diff != "" {
			t.Fatalf("written back (-read +again):\n%s", diff)
		}
	})
}

// FuzzParseTaskState: whatever the bytes of a task state, parseTaskState
// returns a state or an error, never panics nor accepts a negative
// attempt; a state it accepts writes back to the same bytes.
func FuzzParseTaskState(f *testing.F) {
	for _, st := range []driver.TaskState{{Attempt: 1}, {Ended: true, Attempt: 3}, {Waiting: true, Attempt: 2}} {
		f.Add(appendTaskState(nil, st))
	}
	f.Add([]byte{})
	f.Add([]byte{3, 1})
	f.Add([]byte{0, 0x80})
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}) // an attempt past MaxInt64
	f.Fuzz(func(t *testing.T, v []byte) {
		st, err := parseTaskState(v)
		if err != nil {
			return
		}
		if (st.Ended && st.Waiting) || st.Attempt < 0 {
			t.Fatalf("%x: accepted as %+v", v, st)
		}
		again, err := parseTaskState(appendTaskState(nil, st))
		if err != nil || again != st {
			t.Fatalf("%x read as %+v, written back as %+v, %v", v, st, again, err)
		}
	})
}
