package boltstore

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"

	"github.com/clutchprotocol/clutch/store/driver"
)

// The file layout (format 3). Every bucket is at the top level.
//
//	meta       "format" → uint32 BE; "indexed" → uint64 BE (see tail.go)
//	events     seq (uint64 BE) → record
//	ids        id → seq (uint64 BE)
//	ids.blocks first id → up to idBlockLen ids and seqs (see idblocks.go)
//	idem       uvarint(len(key)) ‖ key ‖ run_id → seq (uint64 BE)
//	idem.blocks  the same keys in blocks, as ids.blocks
//	run, thread, task, agent
//	           uvarint(len(attr)) ‖ attr ‖ first seq (uint64 BE) → posting
//	artifacts  sha256 (32 bytes) → artifact record
//	sum.*      run and thread summaries (see summary.go)
//
// Keys that start with a time-ordered id (the ULIDs of protocol.NewIDs)
// land at the end of their B+tree, and the events bucket is append-only,
// which keeps commits cheap as the file grows (docs/protocol.md §11 "the hot path").
var (
	bucketMeta      = []byte("meta")
	bucketEvents    = []byte("events")
	bucketIDs       = []byte("ids")
	bucketIdem      = []byte("idem")
	bucketArtifacts = []byte("artifacts")
	// indexBuckets by driver.Index.
	indexBuckets = [...][]byte{
		driver.RunIndex:    []byte("run"),
		driver.ThreadIndex: []byte("thread"),
		driver.TaskIndex:   []byte("task"),
		driver.AgentIndex:  []byte("agent"),
	}
	// indexes lists the index buckets' driver.Index values.
	indexes    = [...]driver.Index{driver.RunIndex, driver.ThreadIndex, driver.TaskIndex, driver.AgentIndex}
	keyFormat  = []byte("format")
	keyIndexed = []byte("indexed")
)

// formatVersion is the layout this package writes and the only one it
// reads: a file of any other version is refused (ErrFormat), never
// misread.
const formatVersion = 3

// recordVersion tags each record, so a later layout can be told apart.
const recordVersion = 2

// A record is the value of an event:
//
//	[0]     recordVersion
//	[1:9]   append time, Unix nanoseconds, int64 BE
//	[9:13]  CRC-32C (Castagnoli) of [13:] and then of [1:9], uint32 BE
//	then, each as uvarint(len) ‖ bytes: id, run_id, thread_id, task_id,
//	        from.agent_id, type, idempotency_key
//	then    the message bytes, to the end
//
// The header repeats the indexed fields so that filtering, rebuilding the
// in-memory tail and checking the file need no JSON decoding. The checksum
// catches a damaged record (bbolt has no checksum on its pages): the
// caller of Append sums the body, in parallel with other callers, and the
// writer adds the time at commit.
type record struct {
	time                                    int64
	id, run, thread, task, agent, typ, idem []byte
	raw                                     []byte
}

const (
	recordTimeOffset = 1
	recordSumOffset  = 9
	recordHeader     = 13 // version, time, checksum
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// attr returns the record's value for an index.
func (r *record) attr(ix driver.Index) []byte {
	switch ix {
	case driver.RunIndex:
		return r.run
	case driver.ThreadIndex:
		return r.thread
	case driver.TaskIndex:
		return r.task
	case driver.AgentIndex:
		return r.agent
	}
	return nil
}

// appendRecord appends the record of e with a zero time and checksum; the
// writer seals it at commit (sealRecord) with the sum bodySum gives.
func appendRecord(dst []byte, e *driver.Entry) []byte {
	dst = append(dst, recordVersion, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	for _, f := range [...]string{e.ID, e.RunID, e.ThreadID, e.TaskID, e.AgentID, string(e.Type), e.IdempotencyKey} {
		dst = binary.AppendUvarint(dst, uint64(len(f)))
		dst = append(dst, f...)
	}
	return append(dst, e.Raw...)
}

func recordSize(e *driver.Entry) int {
	n := recordHeader + len(e.Raw)
	for _, f := range [...]string{e.ID, e.RunID, e.ThreadID, e.TaskID, e.AgentID, string(e.Type), e.IdempotencyKey} {
		n += uvarintLen(uint64(len(f))) + len(f)
	}
	return n
}

// bodySum is the checksum of a record's body, before the time is added.
func bodySum(rec []byte) uint32 { return crc32.Checksum(rec[recordHeader:], castagnoli) }

// sealRecord sets the record's time and its checksum, given the sum of
// its body.
func sealRecord(rec []byte, body uint32, unixNano int64) {
	binary.BigEndian.PutUint64(rec[recordTimeOffset:], uint64(unixNano))
	binary.BigEndian.PutUint32(rec[recordSumOffset:], crc32.Update(body, castagnoli, rec[recordTimeOffset:recordSumOffset]))
}

// parseRecord decodes v without copying: the fields alias v. A record
// whose checksum does not match is corrupt, and so is a record
// longer than the file (size, 0: no limit), which only a damaged page can
// make bbolt return: nothing reads or copies it.
func parseRecord(v []byte, size int64) (record, error) {
	var r record
	if size > 0 && int64(len(v)) > size {
		return r, corrupt("record of %d bytes in a file of %d", len(v), size)
	}
	if len(v) < recordHeader {
		return r, corrupt("record of %d bytes is shorter than its header", len(v))
	}
	if v[0] != recordVersion {
		return r, corrupt("record version %d, this package reads %d", v[0], recordVersion)
	}
	p := v[recordHeader:]
	sum := crc32.Update(crc32.Checksum(p, castagnoli), castagnoli, v[recordTimeOffset:recordSumOffset])
	if got := binary.BigEndian.Uint32(v[recordSumOffset:]); got != sum {
		return r, corrupt("record checksum %08x, its bytes sum to %08x", got, sum)
	}
	r.time = int64(binary.BigEndian.Uint64(v[1:9]))
	for _, f := range [...]*[]byte{&r.id, &r.run, &r.thread, &r.task, &r.agent, &r.typ, &r.idem} {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return r, corrupt("record field is truncated")
		}
		*f = p[k : k+int(n) : k+int(n)]
		p = p[k+int(n):]
	}
	if len(r.id) == 0 || len(r.run) == 0 || len(r.thread) == 0 || len(r.task) == 0 || len(r.agent) == 0 || len(r.typ) == 0 {
		return r, corrupt("record lacks a required field")
	}
	if len(p) == 0 {
		return r, corrupt("record has no message bytes")
	}
	r.raw = p
	return r, nil
}

// A posting is the value of an index key: the seqs of the key's attribute
// that one index flush wrote, the first in the key and each next one as a
// uvarint delta (≥ 1) from the one before. Keying each chunk by its first
// seq keeps the chunks of an attribute in seq order, so a range read needs
// no sort, and writes one key per attribute and flush instead of one per
// event.
const maxPostingLen = 1024

// appendPosting appends the value for seqs, which must increase.
func appendPosting(dst []byte, seqs []uint64) []byte {
	for i := 1; i < len(seqs); i++ {
		dst = binary.AppendUvarint(dst, seqs[i]-seqs[i-1])
	}
	return dst
}

// eachPosted calls f with the seqs of the posting whose first seq is
// first, in order, until f returns false.
func eachPosted(first uint64, v []byte, f func(seq uint64) bool) error {
	seq := first
	if !f(seq) {
		return nil
	}
	for len(v) > 0 {
		d, k := binary.Uvarint(v)
		if k <= 0 || d == 0 || seq+d < seq {
			return corrupt("posting after seq %d is malformed", seq)
		}
		seq += d
		v = v[k:]
		if !f(seq) {
			return nil
		}
	}
	return nil
}

func seqKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq)
}

func parseSeqKey(k []byte) (uint64, error) {
	if len(k) != 8 {
		return 0, corrupt("seq key of %d bytes", len(k))
	}
	return binary.BigEndian.Uint64(k), nil
}

// attrPrefix is the key prefix of an attribute's postings.
func attrPrefix(attr string) []byte {
	p := binary.AppendUvarint(make([]byte, 0, uvarintLen(uint64(len(attr)))+len(attr)+8), uint64(len(attr)))
	return append(p, attr...)
}

func postingKey(attr string, first uint64) []byte {
	return binary.BigEndian.AppendUint64(attrPrefix(attr), first)
}

// postingFirst returns the first seq of a posting key under prefix, and
// false when k is not such a key.
func postingFirst(k, prefix []byte) (uint64, bool) {
	if len(k) != len(prefix)+8 || !bytes.HasPrefix(k, prefix) {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[len(prefix):]), true
}

// idemKey is the key of (run_id, idempotency_key) in the idem bucket: the
// client's key first, so time-ordered keys append.
func idemKey(run, key string) []byte {
	b := binary.AppendUvarint(make([]byte, 0, 2+len(key)+len(run)), uint64(len(key)))
	return append(append(b, key...), run...)
}

// idemKeyString is string(idemKey(run, key)) in one allocation.
func idemKeyString(run, key string) string {
	var b strings.Builder
	b.Grow(uvarintLen(uint64(len(key))) + len(key) + len(run))
	var n [binary.MaxVarintLen64]byte
	b.Write(binary.AppendUvarint(n[:0], uint64(len(key))))
	b.WriteString(key)
	b.WriteString(run)
	return b.String()
}

// An artifact record: uvarint(len(media type)) ‖ media type ‖ data.
func appendArtifact(dst []byte, mediaType string, data []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(mediaType)))
	return append(append(dst, mediaType...), data...)
}

func parseArtifact(v []byte) (mediaType, data []byte, err error) {
	n, k := binary.Uvarint(v)
	if k <= 0 || n > uint64(len(v)-k) {
		return nil, nil, corrupt("artifact record is truncated")
	}
	return v[k : k+int(n)], v[k+int(n):], nil
}

// clip shortens bytes from the file for an error message: a damaged page
// can make bbolt return a value of gigabytes.
func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
