package boltstore

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/clutchprotocol/clutch/store/driver"
)

func sampleEntry() driver.Entry {
	return driver.Entry{
		Raw: []byte(`{"v":"clutch/0.1"}`), ID: "msg_1", RunID: "run_1", ThreadID: "thr_1",
		TaskID: "task_1", AgentID: "agent:a", Type: "task.result", IdempotencyKey: "k",
	}
}

func TestRecordRoundTrip(t *testing.T) {
	e := sampleEntry()
	rec := appendRecord(nil, &e)
	if len(rec) != recordSize(&e) {
		t.Fatalf("recordSize %d, record %d bytes", recordSize(&e), len(rec))
	}
	sealRecord(rec, bodySum(rec), 1234567890)
	r, err := parseRecord(rec, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := tailEntryOf(&r)
	want := tailEntry{id: e.ID, run: e.RunID, thread: e.ThreadID, task: e.TaskID, agent: e.AgentID, idemKey: string(idemKey(e.RunID, e.IdempotencyKey)), typ: e.Type}
	if got != want || r.time != 1234567890 || !bytes.Equal(r.raw, e.Raw) {
		t.Fatalf("round trip: %+v %d %q", got, r.time, r.raw)
	}
}

// FuzzParseRecord: whatever the bytes of an events value, parseRecord
// returns a record or an ErrCorrupt error, never panics, and a record it
// accepts has fields that lie inside the value.
func FuzzParseRecord(f *testing.F) {
	e := sampleEntry()
	good := appendRecord(nil, &e)
	sealRecord(good, bodySum(good), 42)
	f.Add(good)
	f.Add(good[:9])
	f.Add(good[:len(good)-len(e.Raw)])
	f.Add(append([]byte{2}, good[1:]...))
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add(binary.AppendUvarint(append([]byte{1}, make([]byte, 8)...), 1<<62))
	f.Fuzz(func(t *testing.T, v []byte) {
		r, err := parseRecord(v, 0)
		if err != nil {
			if _, ok := err.(*CorruptError); !ok {
				t.Fatalf("error %T %v, want a *CorruptError", err, err)
			}
			return
		}
		n := recordHeader + len(r.raw)
		for _, f := range [][]byte{r.id, r.run, r.thread, r.task, r.agent, r.typ, r.idem} {
			n += len(f)
		}
		if n > len(v) || len(r.raw) == 0 {
			t.Fatalf("accepted record's parts (%d bytes) do not fit its %d bytes", n, len(v))
		}
	})
}

// FuzzPosting: posting values decode to strictly increasing seqs or to an
// error, never a panic; values written by appendPosting decode to their
// seqs.
func FuzzPosting(f *testing.F) {
	f.Add(uint64(1), appendPosting(nil, []uint64{1, 2, 5, 1000}))
	f.Add(uint64(7), []byte{})
	f.Add(uint64(7), []byte{0})
	f.Add(uint64(1<<64-2), []byte{5})
	f.Add(uint64(3), []byte{0x80})
	f.Fuzz(func(t *testing.T, first uint64, v []byte) {
		prev, n := uint64(0), 0
		err := eachPosted(first, v, func(seq uint64) bool {
			if n > 0 && seq <= prev {
				t.Fatalf("seq %d after %d", seq, prev)
			}
			prev = seq
			n++
			return true
		})
		if err != nil {
			if _, ok := err.(*CorruptError); !ok {
				t.Fatalf("error %T %v, want a *CorruptError", err, err)
			}
			return
		}
		// Re-encoding what was read gives the same value.
		var seqs []uint64
		eachPosted(first, v, func(seq uint64) bool { seqs = append(seqs, seq); return true })
		if re := appendPosting(nil, seqs); !bytes.Equal(re, v) && len(v) > 0 && canonicalUvarints(v) {
			t.Fatalf("re-encoding %v gave %x, want %x", seqs, re, v)
		}
	})
}

// canonicalUvarints reports whether v is a sequence of minimal uvarints
// (a decoder accepts padded ones too, which re-encode shorter).
func canonicalUvarints(v []byte) bool {
	for len(v) > 0 {
		x, k := binary.Uvarint(v)
		if k <= 0 || k != len(binary.AppendUvarint(nil, x)) {
			return false
		}
		v = v[k:]
	}
	return true
}

// FuzzParseArtifact: artifact values decode or fail cleanly.
func FuzzParseArtifact(f *testing.F) {
	f.Add(appendArtifact(nil, "text/plain", []byte("hello")))
	f.Add([]byte{})
	f.Add([]byte{0xff})
	f.Add([]byte{10, 'a'})
	f.Fuzz(func(t *testing.T, v []byte) {
		mt, data, err := parseArtifact(v)
		if err != nil {
			if _, ok := err.(*CorruptError); !ok {
				t.Fatalf("error %T %v, want a *CorruptError", err, err)
			}
			return
		}
		if len(mt)+len(data) > len(v) {
			t.Fatal("parts longer than the value")
		}
	})
}

// A sealed record decodes; with any one bit flipped it does not, and a
// record of another version (the layout before checksums was 1) does not
// either.
func TestRecordChecksum(t *testing.T) {
	e := sampleEntry()
	rec := appendRecord(nil, &e)
	sealRecord(rec, bodySum(rec), 1234567890)
	r, err := parseRecord(rec, 0)
	if err != nil || string(r.id) != e.ID || r.time != 1234567890 || !bytes.Equal(r.raw, e.Raw) {
		t.Fatalf("sealed record: %+v, %v", r, err)
	}
	v1 := append([]byte{1}, rec[recordTimeOffset:recordSumOffset]...)
	v1 = append(v1, rec[recordHeader:]...)
	if _, err := parseRecord(v1, 0); err == nil {
		t.Fatal("a version 1 record decodes")
	}
	for bit := 0; bit < 8*len(rec); bit++ {
		c := bytes.Clone(rec)
		c[bit/8] ^= 1 << (bit % 8)
		if _, err := parseRecord(c, 0); err == nil {
			t.Fatalf("record with bit %d flipped decodes", bit)
		}
	}
}
