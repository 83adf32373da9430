package boltstore_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/storetest"
)

// The corrupt-file test writes damaged copies of a real store file into a
// directory and has a child process (the test binary re-executed with
// corruptChildEnv set to the directory) open and read each of them. A
// fatal runtime error — a fault reading outside bbolt's mapping, which
// recover cannot catch — kills the child, so the parent learns of it from
// the child's exit, with the case it was on.
const corruptChildEnv = "CLUTCH_BOLTSTORE_CORRUPT_CHILD"

// corpusFile is what the child needs to judge a case: the ids written, by
// seq, a run and its events' seqs, and an artifact.
type corpusFile struct {
	IDs      []string          `json:"ids"`
	Run      string            `json:"run"`
	Artifact string            `json:"artifact"`
	Data     []byte            `json:"data"`
	Expect   map[string]string `json:"expect"` // case → "format", "corrupt", "refused" (either) or "" (any typed outcome)
}

// buildCorpus writes a store with events of four runs and an artifact, in
// 4 KiB pages, with the index flushed several times, and closes it.
func buildCorpus(t testing.TB, path string, n int) corpusFile {
	t.Helper()
	s, err := boltstore.Open(path, &boltstore.Options{PageSize: 4096, IndexBatch: 64, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	c := corpusFile{Data: []byte("the artifact's bytes"), Expect: map[string]string{}}
	runs := storetest.BenchMessages(t, n, 4)
	for i := range len(runs[3]) {
		for _, r := range runs {
			res, err := s.Append(t.Context(), r[i])
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Seq != uint64(len(c.IDs)+1) {
				t.Fatalf("seq %d", res[0].Seq)
			}
			c.IDs = append(c.IDs, r[i].ID)
		}
	}
	c.Run = runs[1][0].RunID
	if c.Artifact, err = s.PutArtifact(t.Context(), "text/plain", c.Data); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return c
}

// boltLayout is what the corruption cases need of a bbolt file: its page
// size, its page count (the meta page in use), and the type of each page.
type boltLayout struct {
	ps, pgid int
	root     int
	freelist int
	types    []uint16 // flags of each page header
}

func layoutOf(t testing.TB, b []byte) boltLayout {
	t.Helper()
	meta := func(off int) (ps, pgid, root, freelist int, txid uint64) {
		m := b[off+16:]
		ne := binary.NativeEndian
		return int(ne.Uint32(m[8:])), int(ne.Uint64(m[40:])), int(ne.Uint64(m[16:])), int(ne.Uint64(m[32:])), ne.Uint64(m[48:])
	}
	ps, pgid, root, fl, tx0 := meta(0)
	if _, pgid1, root1, fl1, tx1 := meta(ps); tx1 > tx0 {
		pgid, root, fl = pgid1, root1, fl1
	}
	l := boltLayout{ps: ps, pgid: pgid, root: root, freelist: fl}
	for id := range pgid {
		l.types = append(l.types, binary.NativeEndian.Uint16(b[id*ps+8:]))
	}
	// Free pages keep what they held: they count as free, not as what
	// their header says.
	fp := b[fl*ps:]
	n, at := int(binary.NativeEndian.Uint16(fp[10:])), 16
	if n == 0xFFFF {
		n, at = int(binary.NativeEndian.Uint64(fp[16:])), 24
	}
	for i := range n {
		l.types[binary.NativeEndian.Uint64(fp[at+8*i:])] = 0x10
	}
	return l
}

// pagesOf returns the ids of the pages of a type (0x01 branch, 0x02 leaf).
func (l boltLayout) pagesOf(flags uint16) []int {
	var ids []int
	for id, f := range l.types {
		if f == flags && id >= 2 {
			ids = append(ids, id)
		}
	}
	return ids
}

type corruptCase struct {
	name, expect string
	data         []byte
}

// corruptCases returns the damaged files: truncations, zeroed pages,
// files that are not event stores, and rounds of random bit flips.
func corruptCases(t testing.TB, base []byte, foreign, newer []byte, flips int, rng *rand.Rand) []corruptCase {
	l := layoutOf(t, base)
	ps, hwm := l.ps, l.pgid*l.ps
	var cs []corruptCase
	add := func(name, expect string, data []byte) { cs = append(cs, corruptCase{name, expect, data}) }

	// Truncated: anywhere before the end of the last page in use, the
	// file is refused; at or after it, it is whole (bbolt's files are
	// longer than their pages: the rest is preallocated).
	for _, n := range []int{1, 10, 16, 20, 40, 80, 100, 1000, ps - 1, ps, ps + 40, ps + 100, 2*ps - 1, 2 * ps, 2*ps + ps/2, 3 * ps, 4*ps + 7, hwm / 2, hwm - ps, hwm - ps/2, hwm - 1} {
		add(fmt.Sprintf("truncated at %d", n), "refused", base[:n])
	}
	add("truncated at 0 (an empty file is a new store)", "", base[:0])
	add(fmt.Sprintf("truncated at %d (the end of the last page in use)", hwm), "", base[:hwm])

	zero := func(name, expect string, ids ...int) {
		b := bytes.Clone(base)
		for _, id := range ids {
			clear(b[id*ps : (id+1)*ps])
		}
		add(name, expect, b)
	}
	// One meta page zeroed: bbolt opens the other, which may be a commit
	// older (what a torn meta write after power loss looks like).
	zero("zeroed meta page 0", "", 0)
	zero("zeroed meta page 1", "", 1)
	zero("zeroed meta pages 0 and 1", "refused", 0, 1)
	zero("zeroed root page", "", l.root)
	zero("zeroed free list page", "refused", l.freelist)
	branches, leaves := l.pagesOf(0x01), l.pagesOf(0x02)
	if len(branches) == 0 || len(leaves) < 3 {
		t.Fatalf("the corpus file has %d branch and %d leaf pages", len(branches), len(leaves))
	}
	for i, id := range branches {
		zero(fmt.Sprintf("zeroed branch page %d (%d of %d)", id, i+1, len(branches)), "", id)
	}
	for _, i := range []int{0, 1, len(leaves) / 2, len(leaves) - 2, len(leaves) - 1} {
		zero(fmt.Sprintf("zeroed leaf page %d", leaves[i]), "", leaves[i])
	}
	zero("zeroed every leaf page", "", leaves...)
	// A branch page that refers to itself, or to the root page: bbolt's
	// cursor would go down it forever.
	for _, target := range []int{-1, l.root} {
		b := bytes.Clone(base)
		id := branches[0]
		if target < 0 {
			target = id
		}
		binary.NativeEndian.PutUint64(b[id*ps+16+8:], uint64(target))
		add(fmt.Sprintf("branch page %d refers to page %d", id, target), "corrupt", b)
	}
	// An empty root bucket in a file full of pages: damage, not a new
	// store to create buckets in.
	empty := bytes.Clone(base)
	clear(empty[l.root*ps+10 : l.root*ps+12])
	add("root page with no elements", "corrupt", empty)

	// Not an event store.
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	add("random bytes (64 KiB)", "format", random)
	add("random bytes (5)", "format", random[:5])
	add("a text file", "format", []byte(strings.Repeat("this is not a database, just a text file.\n", 500)))
	add("a bbolt file of another application", "format", foreign)
	add("a store of a newer format version", "format", newer)
	nb := bytes.Clone(base)
	for _, off := range []int{0, ps} { // bbolt format version 3, checksums fixed
		m := nb[off+16:]
		binary.NativeEndian.PutUint32(m[4:], 3)
		h := fnv.New64a()
		h.Write(m[:56])
		binary.NativeEndian.PutUint64(m[56:], h.Sum64())
	}
	add("a bbolt file of a newer bbolt version", "format", nb)

	// Random damage: in a third of the rounds bit flips anywhere in the
	// pages in use, in a third bit flips in page headers and element
	// tables (where bbolt's page ids, offsets and sizes are), in a third
	// bytes there set to random values or 0xff.
	for round := range flips {
		b := bytes.Clone(base[:max(hwm, len(base))])
		k := 1 + rng.IntN(4)
		var where []string
		for range k {
			var bit int
			if round%3 == 0 {
				bit = rng.IntN(hwm * 8)
			} else {
				id := rng.IntN(l.pgid)
				bit = id*ps*8 + rng.IntN((16+16*8)*8)
			}
			if round%3 == 2 {
				v := byte(0xff)
				if rng.IntN(2) == 0 {
					v = byte(rng.Uint32())
				}
				b[bit/8] = v
				where = append(where, fmt.Sprintf("%d=%#x", bit/8, v))
				continue
			}
			b[bit/8] ^= 1 << (bit % 8)
			where = append(where, fmt.Sprintf("%d.%d", bit/8, bit%8))
		}
		add(fmt.Sprintf("bit flips round %d at %s", round, strings.Join(where, ",")), "", b)
	}
	return cs
}

// TestCorruptFiles opens damaged copies of a store file in a child
// process and checks that each is refused with ErrFormat or ErrCorrupt,
// or opens and reads back either the events that were written or an
// ErrCorrupt — never a panic, a crash or wrong data — and that a file
// found damaged is not written to.
func TestCorruptFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	basePath := filepath.Join(dir, "base.db")
	corpus := buildCorpus(t, basePath, 240)
	base, err := os.ReadFile(basePath)
	if err != nil {
		t.Fatal(err)
	}
	foreignPath := filepath.Join(dir, "foreign.db")
	db, err := bolt.Open(foreignPath, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("theirs"))
		if err == nil {
			err = b.Put([]byte("k"), []byte("v"))
		}
		return err
	})
	db.Close()
	foreign, _ := os.ReadFile(foreignPath)
	newerPath := filepath.Join(dir, "newer.db")
	os.WriteFile(newerPath, base, 0o600)
	db, err = bolt.Open(newerPath, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte{0, 0, 0, 99})
	})
	db.Close()
	newer, _ := os.ReadFile(newerPath)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (random bytes and bit flips are drawn from it)", seed)
	flips := 300
	if longRun() {
		flips = 3000
	}
	cases := corruptCases(t, base, foreign, newer, flips, rand.New(rand.NewPCG(seed, 2)))
	cdir := filepath.Join(dir, "cases")
	os.Mkdir(cdir, 0o700)
	names := map[string]string{}
	for i, c := range cases {
		file := fmt.Sprintf("%04d.db", i)
		names[file] = c.name
		corpus.Expect[file] = c.expect
		if err := os.WriteFile(filepath.Join(cdir, file), c.data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	j, _ := json.Marshal(corpus)
	os.WriteFile(filepath.Join(cdir, "corpus.json"), j, 0o600)

	// A loop in bbolt's cursor would grow the child's memory without end:
	// a deadline ends it (and fails the test).
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(1+flips/100)*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), corruptChildEnv+"="+cdir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	results := map[string]string{}
	var started string
	for line := range strings.Lines(string(out)) {
		f := strings.SplitN(strings.TrimSpace(line), " ", 3)
		switch {
		case len(f) == 2 && f[0] == "start":
			started = f[1]
		case len(f) == 3 && f[0] == "done":
			results[f[1]] = f[2]
		}
	}
	if err != nil {
		tail := stderr.String()
		if len(tail) > 4000 {
			tail = tail[:4000]
		}
		t.Fatalf("the child died (%v) on case %q (%s): %s", err, started, names[started], tail)
	}
	tally := map[string]int{}
	files := slices.Sorted(func(yield func(string) bool) {
		for f := range names {
			if !yield(f) {
				return
			}
		}
	})
	for _, file := range files {
		r, ok := results[file]
		if !ok {
			t.Errorf("%s: no result", names[file])
			continue
		}
		class, _, _ := strings.Cut(r, ":")
		if strings.HasPrefix(class, "FAIL") {
			t.Errorf("%s: %s", names[file], r)
		}
		if !strings.HasPrefix(names[file], "bit flips") {
			t.Logf("%-60s %s", names[file], r)
		}
		kind := "bit flips"
		if !strings.HasPrefix(names[file], "bit flips") {
			kind, _, _ = strings.Cut(names[file], " ")
		}
		tally[kind+" → "+class]++
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range tally {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		t.Logf("%4d  %s", tally[k], k)
	}
	t.Logf("%d cases, 0 panics or crashes", len(files))
}

// corruptChild runs the child of TestCorruptFiles when the environment
// asks for it, and reports whether it did. It prints "start <file>" before
// each case and "done <file> <outcome>" after it; an outcome starting with
// FAIL is a broken promise.
func corruptChild() bool {
	dir := os.Getenv(corruptChildEnv)
	if dir == "" {
		return false
	}
	j, err := os.ReadFile(filepath.Join(dir, "corpus.json"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var c corpusFile
	if err := json.Unmarshal(j, &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	w := bufio.NewWriter(os.Stdout)
	files := make([]string, 0, len(c.Expect))
	for f := range c.Expect {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		fmt.Fprintf(w, "start %s\n", f)
		w.Flush()
		fmt.Fprintf(w, "done %s %s\n", f, exerciseCorrupt(filepath.Join(dir, f), &c, c.Expect[f]))
		w.Flush()
	}
	return true
}

// typed classifies an error: "corrupt", "format", or a FAIL for any other.
func typed(op string, err error) string {
	var ce *boltstore.CorruptError
	var fe *boltstore.FormatError
	switch {
	case errors.As(err, &ce) && errors.Is(err, boltstore.ErrCorrupt) && ce.Detail != "":
		return "corrupt"
	case errors.As(err, &fe) && errors.Is(err, boltstore.ErrFormat) && fe.Error() != "":
		return "format"
	}
	return fmt.Sprintf("FAIL untyped error from %s: %T %v", op, err, err)
}

// exerciseCorrupt opens the file at path and uses every method that reads
// it, and returns the outcome: "refused-<kind>: error" when Open refuses
// it, "intact" when everything reads back right and Check passes,
// "detected: ..." when the damage showed as ErrCorrupt, or a FAIL.
func exerciseCorrupt(path string, c *corpusFile, expect string) string {
	before, _ := os.ReadFile(path)
	ctx := context.Background()
	s, err := boltstore.Open(path, &boltstore.Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		kind := typed("Open", err)
		switch {
		case strings.HasPrefix(kind, "FAIL"):
			return kind
		case expect == "":
		case expect == "refused":
		case expect != kind:
			return fmt.Sprintf("FAIL refused with %s, want %s: %v", kind, expect, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			return "FAIL Open changed a file it refused"
		}
		return "refused-" + kind + ": " + oneLine(err)
	}
	if expect != "" {
		s.Close()
		return "FAIL opened, want it refused (" + expect + ")"
	}
	var problems []string // what showed as ErrCorrupt
	fail := func(op string, err error) string {
		k := typed(op, err)
		if k == "corrupt" {
			problems = append(problems, op)
			return ""
		}
		if k == "format" {
			return "FAIL " + op + " gave ErrFormat on an open store"
		}
		return k
	}
	last, err := s.LastSeq(ctx)
	if err != nil || last > uint64(len(c.IDs)) {
		s.Close()
		return fmt.Sprintf("FAIL LastSeq %d, %v (%d written)", last, err, len(c.IDs))
	}
	_ = s.Stats()
	// Every event read back decodes and is the one written at its seq.
	check := func(op string, q store.Query) string {
		n := 0
		for ev, err := range s.Read(ctx, q) {
			if err != nil {
				return fail(op, err)
			}
			n++
			if ev.Seq == 0 || ev.Seq > uint64(len(c.IDs)) {
				return fmt.Sprintf("FAIL %s: seq %d", op, ev.Seq)
			}
			m, err := ev.Message()
			if err != nil {
				return fmt.Sprintf("FAIL %s: event %d does not decode: %v", op, ev.Seq, err)
			}
			if m.ID != c.IDs[ev.Seq-1] {
				return fmt.Sprintf("FAIL %s: event %d is %s, %s was written", op, ev.Seq, m.ID, c.IDs[ev.Seq-1])
			}
			if q.RunID != "" && m.RunID != q.RunID {
				return fmt.Sprintf("FAIL %s: event %d of run %s", op, ev.Seq, m.RunID)
			}
		}
		if q.RunID == "" && uint64(n) != last {
			return fmt.Sprintf("FAIL %s: %d events read, LastSeq %d, no error", op, n, last)
		}
		return ""
	}
	var missing []string // ids not found through the index
	res := func() string {
		if r := check("read", store.Query{}); r != "" {
			return r
		}
		if r := check("read run", store.Query{RunID: c.Run}); r != "" {
			return r
		}
		for i := 0; i < len(c.IDs); i += 7 {
			ev, err := s.Get(ctx, c.IDs[i])
			switch {
			case errors.Is(err, store.ErrNotFound):
				if uint64(i) < last {
					missing = append(missing, c.IDs[i])
				}
			case err != nil:
				if r := fail("get", err); r != "" {
					return r
				}
			case ev.Seq != uint64(i+1):
				return fmt.Sprintf("FAIL get %s: seq %d, want %d", c.IDs[i], ev.Seq, i+1)
			}
		}
		if a, err := s.GetArtifact(ctx, c.Artifact); err != nil && !errors.Is(err, store.ErrNotFound) {
			if r := fail("get artifact", err); r != "" {
				return r
			}
		} else if err == nil && !bytes.Equal(a.Data, c.Data) {
			return "FAIL artifact data differs"
		}
		if last > 0 {
			n := uint64(0)
			for ev, err := range s.Follow(ctx, store.Query{}) {
				if err != nil {
					return fail("follow", err)
				}
				if n++; ev.Seq != n || n == last {
					break
				}
			}
		}
		return ""
	}()
	if res != "" {
		s.Close()
		return res
	}
	cerr := s.Check(ctx)
	if cerr != nil {
		if r := fail("check", cerr); r != "" {
			s.Close()
			return r
		}
	}
	if cerr == nil && (len(problems) > 0 || len(missing) > 0) {
		s.Close()
		return fmt.Sprintf("FAIL Check passed a file where %v failed and %d ids were missing", problems, len(missing))
	}
	if len(problems) > 0 {
		// A store that found damage refuses to write to the file.
		if _, err := s.Append(ctx, storetest.BenchMessages(nopTB{}, 1, 1)[0]...); !errors.Is(err, boltstore.ErrCorrupt) {
			s.Close()
			return fmt.Sprintf("FAIL Append after corruption was found: %v", err)
		}
		if _, err := s.PutArtifact(ctx, "text/plain", []byte("x")); !errors.Is(err, boltstore.ErrCorrupt) {
			s.Close()
			return fmt.Sprintf("FAIL PutArtifact after corruption was found: %v", err)
		}
	}
	if err := s.Close(); err != nil {
		if r := fail("close", err); r != "" {
			return r
		}
	}
	if len(problems) > 0 {
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			return "FAIL a file found damaged was written to"
		}
	}
	switch {
	case len(problems) == 0 && len(missing) == 0:
		return fmt.Sprintf("intact: %d events", last)
	case len(missing) > 0 && len(problems) == 0:
		return fmt.Sprintf("FAIL %d ids not found, nothing reported", len(missing))
	}
	return fmt.Sprintf("detected: %s (%d events; %s)", strings.Join(slices.Compact(problems), ","), last, oneLine(cerr))
}

func oneLine(err error) string {
	if err == nil {
		return "-"
	}
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// nopTB lets the child use storetest.BenchMessages outside a test.
type nopTB struct{ testing.TB }

func (nopTB) Helper() {}

// FuzzOpenFile: whatever the bytes of a file, Open and then every read,
// Check and Close give data or a typed error (ErrFormat, ErrCorrupt),
// never a panic or a crash. The seeds are a small valid store (4 KiB
// pages) and damaged copies of it.
func FuzzOpenFile(f *testing.F) {
	path := filepath.Join(f.TempDir(), "seed.db")
	buildCorpus(f, path, 12)
	valid, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	l := layoutOf(f, valid)
	valid = valid[:l.pgid*l.ps] // what follows is bbolt's preallocation
	f.Add(valid)
	f.Add(valid[:len(valid)-l.ps])
	f.Add(valid[:l.ps+100])
	f.Add([]byte("not a database"))
	for _, id := range []int{0, l.root, l.freelist, l.pgid - 1} {
		b := bytes.Clone(valid)
		clear(b[id*l.ps : (id+1)*l.ps])
		f.Add(b)
	}
	for _, bit := range []int{2*l.ps*8 + 70, 3*l.ps*8 + 200, (l.pgid-2)*l.ps*8 + 130} {
		b := bytes.Clone(valid)
		b[bit/8] ^= 1 << (bit % 8)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		ok := func(op string, err error) {
			t.Helper()
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				if k := typed(op, err); strings.HasPrefix(k, "FAIL") {
					t.Fatal(k)
				}
			}
		}
		s, err := boltstore.Open(path, &boltstore.Options{LockTimeout: 100 * time.Millisecond, NoSync: true})
		if err != nil {
			ok("Open", err)
			return
		}
		defer func() { ok("Close", s.Close()) }()
		_, err = s.LastSeq(t.Context())
		ok("LastSeq", err)
		_ = s.Stats()
		n := 0
		for ev, err := range s.Read(t.Context(), store.Query{}) {
			if err != nil {
				ok("Read", err)
				break
			}
			if m, err := ev.Message(); err == nil {
				_, err := s.Get(t.Context(), m.ID)
				ok("Get", err)
				for _, err := range s.Read(t.Context(), store.Query{RunID: m.RunID, Limit: 3}) {
					ok("Read run", err)
				}
			}
			if n++; n == 20 {
				break
			}
		}
		_, err = s.GetArtifact(t.Context(), "artifact:sha256:"+strings.Repeat("ab", 32))
		ok("GetArtifact", err)
		ok("Check", s.Check(t.Context()))
	})
}
