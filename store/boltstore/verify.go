package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
)

// What bbolt checks and what it does not (go.etcd.io/bbolt v1.5.0): it
// validates the magic, version and checksum of its two meta pages and uses
// the valid one with the higher transaction id. Nothing else in the file
// is checked before use: page ids, element offsets and sizes, and the free
// list are followed as they are, through unsafe pointers into the memory
// mapping. A damaged page then makes bbolt panic ("page 0 expected to be
// 17"), index out of range, or read outside the file: past its end inside
// the mapping (SIGBUS) or outside the mapping (SIGSEGV) — a fatal runtime
// error that recover cannot catch, unless the goroutine runs with
// debug.SetPanicOnFault. So this package
//   - checks the meta pages, the free list and the root page itself, with
//     plain reads, before bbolt opens the file (inspect);
//   - runs every call that reads the mapping with SetPanicOnFault on and a
//     recover, turning a panic or fault into a CorruptError (guard);
//   - checks the page structure for Check with plain reads, never through
//     the mapping (walk), instead of bbolt's Tx.Check, which runs in a
//     goroutine of its own where a fault cannot be caught.

// The on-file layout of bbolt v1.5.0 (internal/common): native byte order.
const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	pageHeaderSize  = 16 // id u64, flags u16, count u16, overflow u32
	metaSize        = 64 // magic, version, pageSize, flags u32; root u64, seq u64; freelist, pgid, txid, checksum u64
	elemSize        = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags u32, pos u32, ksize u32, vsize u32
	inBucketSize    = 16 // root pgid u64, sequence u64
	noFreelist      = ^uint64(0)
	branchPageFlag  = 0x01
	leafPageFlag    = 0x02
	metaPageFlag    = 0x04
	freelistFlag    = 0x10
	bucketLeafFlag  = 0x01
	minPageSize     = 1024
	maxPageSize     = 1 << 16
	maxTreeDepth    = 64 // far more than any file this package can hold
	freelistCountFF = 0xFFFF
)

var ne = binary.NativeEndian

type boltMeta struct {
	magic, version, pageSize, flags uint32
	root, freelist, pgid, txid      uint64
}

// parseMeta decodes the meta of a meta page and says what is wrong with
// it, "" when it is valid (bbolt's Meta.Validate).
func parseMeta(page []byte) (boltMeta, string) {
	var m boltMeta
	if len(page) < pageHeaderSize+metaSize {
		if len(page) >= pageHeaderSize+4 {
			m.magic = ne.Uint32(page[pageHeaderSize:])
		}
		return m, "cut short"
	}
	b := page[pageHeaderSize : pageHeaderSize+metaSize]
	m.magic, m.version, m.pageSize, m.flags = ne.Uint32(b), ne.Uint32(b[4:]), ne.Uint32(b[8:]), ne.Uint32(b[12:])
	m.root, m.freelist, m.pgid, m.txid = ne.Uint64(b[16:]), ne.Uint64(b[32:]), ne.Uint64(b[40:]), ne.Uint64(b[48:])
	h := fnv.New64a()
	h.Write(b[:56])
	switch {
	case m.magic != boltMagic:
		return m, "no bbolt magic"
	case m.version != boltVersion:
		return m, fmt.Sprintf("bbolt format version %d", m.version)
	case ne.Uint64(b[56:]) != h.Sum64():
		return m, "checksum mismatch"
	}
	return m, ""
}

// inspect checks, with plain reads of the file, what bbolt trusts when it
// opens a file: a valid meta page, a page size, a file long enough for
// the pages the meta page counts, and a free list and a root page that are
// what the meta page says. An empty file is a new store (nil). The file
// is only read.
func inspect(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = inspectFile(path, f)
	return err
}

// inspectFile is inspect on an open file; it returns the meta page bbolt
// uses (zero for an empty file).
func inspectFile(path string, f *os.File) (boltMeta, error) {
	fi, err := f.Stat()
	if err != nil {
		return boltMeta{}, err
	}
	size := fi.Size()
	if size == 0 {
		return boltMeta{}, nil
	}
	formatErr := func(detail string) error {
		return &FormatError{Path: path, Supported: formatVersion, Detail: detail}
	}
	corruptErr := func(format string, args ...any) error {
		return corrupt("%s: %s", path, fmt.Sprintf(format, args...))
	}
	first := make([]byte, min(size, 4096))
	if _, err := f.ReadAt(first, 0); err != nil {
		return boltMeta{}, err
	}
	m0, bad0 := parseMeta(first)
	// The page size: meta 0's, or else the offset where a valid meta 1 is
	// (bbolt's getPageSize does the same).
	var m1 boltMeta
	bad1 := "not found"
	ps := 0
	if bad0 == "" {
		ps = int(m0.pageSize)
		if ps < minPageSize || ps > maxPageSize || ps&(ps-1) != 0 {
			return boltMeta{}, formatErr(fmt.Sprintf("bbolt page size %d (this package reads %d to %d)", ps, minPageSize, maxPageSize))
		}
		if size >= int64(2*ps) {
			m1, bad1 = readMetaAt(f, int64(ps))
		} else {
			bad1 = "past the end of the file"
		}
	} else {
		for p := minPageSize; p <= maxPageSize; p *= 2 {
			if int64(p)+pageHeaderSize+metaSize > size {
				break
			}
			if m, bad := readMetaAt(f, int64(p)); bad == "" && int(m.pageSize) == p {
				m1, bad1, ps = m, "", p
				break
			} else if bad1 == "not found" || bad != "no bbolt magic" {
				bad1 = bad
			}
		}
	}
	if bad0 != "" && bad1 != "" {
		magic := m0.magic == boltMagic || m1.magic == boltMagic
		switch {
		case !magic && !looksLikeBolt(f, size):
			return boltMeta{}, formatErr(fmt.Sprintf("not a bbolt file (meta page 0: %s; meta page 1: %s)", bad0, bad1))
		case strings.HasPrefix(bad0, "bbolt format version") && bad1 != "checksum mismatch":
			return boltMeta{}, formatErr(fmt.Sprintf("bbolt format version %d, this package reads %d", m0.version, boltVersion))
		}
		return boltMeta{}, corruptErr("both bbolt meta pages are invalid (meta page 0: %s; meta page 1: %s)", bad0, bad1)
	}
	m := m0
	if bad0 != "" || (bad1 == "" && m1.txid > m0.txid) {
		m = m1
	}
	if bad0 == "" && bad1 == "" && m0.pageSize != m1.pageSize {
		return boltMeta{}, corruptErr("the meta pages disagree on the page size (%d, %d)", m0.pageSize, m1.pageSize)
	}
	if int(m.pageSize) != ps {
		return boltMeta{}, corruptErr("meta page of tx %d has page size %d, found at %d", m.txid, m.pageSize, ps)
	}
	pages := uint64(size) / uint64(ps)
	switch {
	case m.pgid < 4 || m.pgid > 1<<48:
		return boltMeta{}, corruptErr("meta page of tx %d counts %d pages", m.txid, m.pgid)
	case m.pgid > pages:
		return boltMeta{}, corruptErr("truncated: the file has %d bytes, its last commit (tx %d) uses %d pages of %d bytes (%d bytes)",
			size, m.txid, m.pgid, ps, m.pgid*uint64(ps))
	case m.freelist == noFreelist:
		return boltMeta{}, formatErr("a bbolt file without a stored free list (NoFreelistSync): opening it would rewrite it")
	case m.root < 2 || m.root >= m.pgid:
		return boltMeta{}, corruptErr("root page %d is outside pages 2..%d", m.root, m.pgid-1)
	case m.freelist < 2 || m.freelist >= m.pgid || m.freelist == m.root:
		return boltMeta{}, corruptErr("free list page %d is outside pages 2..%d", m.freelist, m.pgid-1)
	}
	r := pageReader{f: f, ps: ps, pgid: m.pgid}
	root, err := r.read(m.root)
	if err != nil {
		return boltMeta{}, corruptErr("root page: %v", err)
	}
	if fl := ne.Uint16(root[8:]); fl != branchPageFlag && fl != leafPageFlag {
		return boltMeta{}, corruptErr("root page %d has type %#x", m.root, fl)
	}
	free, span, err := r.freelist(m.freelist)
	if err != nil {
		return boltMeta{}, corruptErr("%v", err)
	}
	for _, id := range free {
		if id >= m.root && id <= m.root+uint64(len(root)/ps-1) {
			return boltMeta{}, corruptErr("free list holds the root page %d", id)
		}
		if id >= m.freelist && id < m.freelist+span {
			return boltMeta{}, corruptErr("free list holds its own page %d", id)
		}
	}
	if err := r.shape(m, free, span); err != nil {
		return boltMeta{}, corruptErr("%v", err)
	}
	return m, nil
}

// shape checks the inner pages of the file's B+trees, which bbolt follows
// without a check: a loop among them sends bbolt's cursor down forever
// (growing memory, or recursing until the stack limit, a fatal error). It
// reads the root bucket's pages and every branch page of the buckets'
// trees — not their leaves, so the cost is a small part of the file — and
// checks that every page reference is a page in use, not a meta, free
// list or free page, and is made once. A branch page is followed if the
// first page it refers to is a branch page (bbolt's trees are balanced).
func (r *pageReader) shape(m boltMeta, free []uint64, span uint64) error {
	var taken pageSet = make([]uint64, (r.pgid+63)/64)
	for _, id := range free {
		taken.add(id)
	}
	for i := range span {
		taken.add(m.freelist + i)
	}
	ref := func(id uint64) error {
		if id < 2 || id >= r.pgid || taken.has(id) {
			return fmt.Errorf("a page refers to page %d, which is outside pages 2..%d, free, or referred to twice", id, r.pgid-1)
		}
		taken.add(id)
		return nil
	}
	var visit func(id uint64, leaves bool, depth int) error
	visit = func(id uint64, leaves bool, depth int) error {
		if depth > maxTreeDepth {
			return fmt.Errorf("page %d: tree deeper than %d", id, maxTreeDepth)
		}
		p, err := r.read(id)
		if err != nil {
			return err
		}
		for i := uint64(1); i < uint64(len(p)/r.ps); i++ {
			if err := ref(id + i); err != nil {
				return err
			}
		}
		fl, n := ne.Uint16(p[8:]), int(ne.Uint16(p[10:]))
		if n > (len(p)-pageHeaderSize)/elemSize {
			return fmt.Errorf("page %d: %d elements do not fit", id, n)
		}
		switch fl {
		case leafPageFlag:
			if !leaves {
				return nil
			}
			for i := range n { // the root bucket's leaf: the buckets
				e := pageHeaderSize + i*elemSize
				if ne.Uint32(p[e:])&bucketLeafFlag == 0 {
					continue
				}
				start := uint64(e) + uint64(ne.Uint32(p[e+4:])) + uint64(ne.Uint32(p[e+8:]))
				if start+inBucketSize > uint64(len(p)) {
					return fmt.Errorf("page %d: bucket element %d lies outside the page", id, i)
				}
				if root := ne.Uint64(p[start:]); root != 0 {
					err := ref(root)
					if err == nil {
						err = visit(root, false, depth+1)
					}
					if err != nil {
						kstart := uint64(e) + uint64(ne.Uint32(p[e+4:]))
						return fmt.Errorf("bucket %q: %w", clip(p[kstart:start]), err)
					}
				}
			}
			return nil
		case branchPageFlag:
			if n == 0 {
				return fmt.Errorf("page %d: empty branch page", id)
			}
			kids := make([]uint64, n)
			for i := range n {
				e := pageHeaderSize + i*elemSize
				if end := uint64(e) + uint64(ne.Uint32(p[e:])) + uint64(ne.Uint32(p[e+4:])); end > uint64(len(p)) {
					return fmt.Errorf("page %d: element %d lies outside the page", id, i)
				}
				kids[i] = ne.Uint64(p[e+8:])
				if err := ref(kids[i]); err != nil {
					return fmt.Errorf("page %d: %v", id, err)
				}
			}
			if !leaves {
				h := make([]byte, pageHeaderSize)
				if _, err := r.f.ReadAt(h, int64(kids[0])*int64(r.ps)); err != nil {
					return fmt.Errorf("page %d: %v", kids[0], err)
				}
				if ne.Uint16(h[8:]) != branchPageFlag {
					return nil // the next level holds the leaves
				}
			}
			for _, k := range kids {
				if err := visit(k, leaves, depth+1); err != nil {
					return err
				}
			}
			return nil
		}
		return fmt.Errorf("page %d: type %#x in a tree", id, fl)
	}
	taken.add(m.root)
	return visit(m.root, true, 0)
}

// pageSet is a set of page ids below a page count, a bit each.
type pageSet []uint64

func (s pageSet) add(id uint64)      { s[id/64] |= 1 << (id % 64) }
func (s pageSet) has(id uint64) bool { return s[id/64]&(1<<(id%64)) != 0 }

func readMetaAt(f *os.File, off int64) (boltMeta, string) {
	buf := make([]byte, pageHeaderSize+metaSize)
	if _, err := f.ReadAt(buf, off); err != nil {
		return boltMeta{}, "cut short"
	}
	return parseMeta(buf)
}

// looksLikeBolt reports whether page 2 of the file, for some page size,
// has a bbolt page header: a file whose meta pages are both destroyed.
func looksLikeBolt(f *os.File, size int64) bool {
	var h [pageHeaderSize]byte
	for p := int64(minPageSize); p <= maxPageSize && 3*p <= size; p *= 2 {
		if _, err := f.ReadAt(h[:], 2*p); err != nil {
			return false
		}
		fl := ne.Uint16(h[8:])
		if ne.Uint64(h[:]) == 2 && (fl == branchPageFlag || fl == leafPageFlag || fl == freelistFlag) {
			return true
		}
	}
	return false
}

// pageReader reads pages of a bbolt file with plain reads, checking each
// against the page count of the meta page in use.
type pageReader struct {
	f    io.ReaderAt
	ps   int
	pgid uint64 // pages in use: ids below it
}

// read returns page id and its overflow pages after checking the header:
// the id it names itself by, and its extent.
func (r *pageReader) read(id uint64) ([]byte, error) {
	if id < 2 || id >= r.pgid {
		return nil, fmt.Errorf("page %d is outside pages 2..%d", id, r.pgid-1)
	}
	h := make([]byte, r.ps)
	if _, err := r.f.ReadAt(h, int64(id)*int64(r.ps)); err != nil {
		return nil, fmt.Errorf("page %d: %v", id, err)
	}
	if got := ne.Uint64(h); got != id {
		return nil, fmt.Errorf("page %d names itself page %d", id, got)
	}
	over := uint64(ne.Uint32(h[12:]))
	if id+over >= r.pgid {
		return nil, fmt.Errorf("page %d has %d overflow pages, past page %d", id, over, r.pgid-1)
	}
	if over == 0 {
		return h, nil
	}
	p := make([]byte, (over+1)*uint64(r.ps))
	copy(p, h)
	if _, err := r.f.ReadAt(p[r.ps:], int64(id+1)*int64(r.ps)); err != nil {
		return nil, fmt.Errorf("page %d: %v", id, err)
	}
	return p, nil
}

// freelist reads and checks the free list page: its ids are pages in use
// range, sorted out, with no id twice. It returns the ids and the pages the
// free list itself spans.
func (r *pageReader) freelist(id uint64) ([]uint64, uint64, error) {
	p, err := r.read(id)
	if err != nil {
		return nil, 0, fmt.Errorf("free list: %v", err)
	}
	if fl := ne.Uint16(p[8:]); fl != freelistFlag {
		return nil, 0, fmt.Errorf("free list page %d has type %#x", id, fl)
	}
	n, at := uint64(ne.Uint16(p[10:])), pageHeaderSize
	if n == freelistCountFF {
		n, at = ne.Uint64(p[pageHeaderSize:]), pageHeaderSize+8
	}
	if n > uint64(len(p)-at)/8 {
		return nil, 0, fmt.Errorf("free list page %d counts %d ids, room for %d", id, n, (len(p)-at)/8)
	}
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = ne.Uint64(p[at+8*i:])
	}
	slices.Sort(ids)
	for i, v := range ids {
		if v < 2 || v >= r.pgid {
			return nil, 0, fmt.Errorf("free list holds page %d, outside pages 2..%d", v, r.pgid-1)
		}
		if i > 0 && ids[i-1] == v {
			return nil, 0, fmt.Errorf("free list holds page %d twice", v)
		}
	}
	return ids, uint64(len(p) / r.ps), nil
}

// walk checks the page structure of the file as of the meta page m, with
// plain reads: every page reachable from the root is a branch or leaf page
// that names itself right, its elements, keys and values lie inside it,
// keys are in order within and across pages, nested bucket roots (and
// inline buckets) are sound, no page is reached twice or is also free, and
// every page is either reachable or free.
func walk(ctx context.Context, f io.ReaderAt, m boltMeta) error {
	r := pageReader{f: f, ps: int(m.pageSize), pgid: m.pgid}
	w := walker{ctx: ctx, r: &r, used: make([]bool, m.pgid)}
	w.used[0], w.used[1] = true, true
	free, span, err := r.freelist(m.freelist)
	if err != nil {
		return err
	}
	for i := range span {
		w.used[m.freelist+i] = true
	}
	for _, id := range free {
		if w.used[id] {
			return fmt.Errorf("page %d is both free and in use", id)
		}
		w.used[id] = true
	}
	if err := w.tree(m.root, nil, nil, 0); err != nil {
		return err
	}
	for id, u := range w.used {
		if !u {
			return fmt.Errorf("page %d is neither reachable nor free", id)
		}
	}
	return nil
}

type walker struct {
	ctx   context.Context
	r     *pageReader
	used  []bool
	pages int // read so far
}

// tree checks the subtree at page id, whose keys must be ≥ lo and < hi
// (nil: unbounded).
func (w *walker) tree(id uint64, lo, hi []byte, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("page %d: tree deeper than %d", id, maxTreeDepth)
	}
	if w.pages++; w.pages%256 == 0 {
		if err := w.ctx.Err(); err != nil {
			return err
		}
	}
	p, err := w.r.read(id)
	if err != nil {
		return err
	}
	for i := range uint64(len(p) / w.r.ps) {
		if w.used[id+i] {
			return fmt.Errorf("page %d is reached twice, or is also free", id+i)
		}
		w.used[id+i] = true
	}
	return w.page(p, id, lo, hi, depth)
}

// page checks the branch or leaf page p (a page of the file, or an
// inline bucket's page).
func (w *walker) page(p []byte, id uint64, lo, hi []byte, depth int) error {
	if len(p) < pageHeaderSize {
		return fmt.Errorf("page %d: shorter than its header", id)
	}
	fl, n := ne.Uint16(p[8:]), int(ne.Uint16(p[10:]))
	if fl != branchPageFlag && fl != leafPageFlag {
		return fmt.Errorf("page %d: type %#x in a tree", id, fl)
	}
	if n > (len(p)-pageHeaderSize)/elemSize {
		return fmt.Errorf("page %d: %d elements do not fit", id, n)
	}
	if fl == branchPageFlag && n == 0 {
		return fmt.Errorf("page %d: empty branch page", id)
	}
	var prev []byte
	for i := range n {
		e := pageHeaderSize + i*elemSize
		var pos, ksize, vsize uint64
		if fl == branchPageFlag {
			pos, ksize = uint64(ne.Uint32(p[e:])), uint64(ne.Uint32(p[e+4:]))
		} else {
			pos, ksize, vsize = uint64(ne.Uint32(p[e+4:])), uint64(ne.Uint32(p[e+8:])), uint64(ne.Uint32(p[e+12:]))
		}
		start := uint64(e) + pos
		if end := start + ksize + vsize; end > uint64(len(p)) || start < uint64(pageHeaderSize+n*elemSize) {
			return fmt.Errorf("page %d: element %d lies outside the page", id, i)
		}
		key := p[start : start+ksize]
		switch {
		case i > 0 && bytes.Compare(prev, key) >= 0:
			return fmt.Errorf("page %d: keys out of order at element %d", id, i)
		case lo != nil && bytes.Compare(key, lo) < 0 && !(fl == branchPageFlag && i == 0),
			hi != nil && bytes.Compare(key, hi) >= 0:
			return fmt.Errorf("page %d: key %d is outside its parent's range", id, i)
		}
		prev = key
		if fl == branchPageFlag {
			clo, chi := key, hi
			if i == 0 {
				clo = lo
			}
			if i+1 < n {
				ne2 := pageHeaderSize + (i+1)*elemSize
				npos, nks := uint64(ne.Uint32(p[ne2:])), uint64(ne.Uint32(p[ne2+4:]))
				if s := uint64(ne2) + npos; s+nks <= uint64(len(p)) {
					chi = p[s : s+nks]
				}
			}
			if err := w.tree(ne.Uint64(p[e+8:]), clo, chi, depth+1); err != nil {
				return err
			}
			continue
		}
		if ne.Uint32(p[e:])&bucketLeafFlag == 0 {
			continue
		}
		v := p[start+ksize : start+ksize+vsize]
		if len(v) < inBucketSize {
			return fmt.Errorf("page %d: bucket %q has a value of %d bytes", id, clip(key), len(v))
		}
		if root := ne.Uint64(v); root != 0 {
			if err := w.tree(root, nil, nil, depth+1); err != nil {
				return fmt.Errorf("bucket %q: %w", clip(key), err)
			}
		} else if err := w.page(v[inBucketSize:], 0, nil, nil, depth+1); err != nil {
			return fmt.Errorf("inline bucket %q: %w", clip(key), err)
		}
	}
	return nil
}

// guard runs f, which reads the file through bbolt, with memory faults
// turned into panics (debug.SetPanicOnFault, for this goroutine only, set
// back afterwards), and turns a panic into a CorruptError that names op
// and what bbolt said. A detected corruption stops appends (see broken).
func (s *Store) guard(op string, f func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			err = corrupt("%s: %s: bbolt failed on a damaged page: %v", s.path, op, r)
		}
		if errors.Is(err, ErrCorrupt) {
			s.setBroken(err)
		}
	}()
	return f()
}

// setBroken records the first corruption found; from then on the store
// refuses appends and artifacts (and the index flush at Close) with it, so
// a damaged file is never written to.
func (s *Store) setBroken(err error) {
	s.broken.CompareAndSwap(nil, &brokenError{err})
}

// brokenErr returns the error appends get after a corruption was found,
// nil before.
func (s *Store) brokenErr() error {
	if b := s.broken.Load(); b != nil {
		return b
	}
	return nil
}

type brokenError struct{ cause error }

func (e *brokenError) Error() string {
	return "boltstore: writes refused after a corruption was found: " + e.cause.Error()
}

func (e *brokenError) Unwrap() error { return e.cause }
