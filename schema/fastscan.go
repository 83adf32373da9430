package schema

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/xeipuuv/gojsonschema"
)

// The fast path's scanner: it parses the payload and validates it against a
// fastNode tree in the same pass, without building any value.
//
// It must never say fastValid for a payload the slow path refuses, so it
// is at least as strict as decodePayload: encoding/json's grammar, the size
// limit, no trailing data, number literals within maxNumberLen and
// maxExponent. Where encoding/json would quietly change the data (invalid
// UTF-8 becomes U+FFFD, a lone surrogate escape too, a duplicate member
// keeps its last value), the scanner bails instead of guessing.
//
// Its fastInvalid must be as sure, since not and oneOf turn it into a
// "valid": an object member that fails only fails if no later member
// repeats its name, so the object is scanned to its end first; a bail
// anywhere inside wins over an invalid.
//
// A value is judged only after an enclosing node has scanned all of it
// (applicators run after the node's own checks passed), so every number a
// subschema sees is within float64's range and the slow path's enum and
// const, which turn numbers into float64, cannot fail (and panic) on it.

// fastMaxDepth bounds nesting; encoding/json allows 10000.
const fastMaxDepth = 512

// fastRun is the state of one validation.
type fastRun struct {
	data []byte
	sc   *fastScratch // from scratchPool, on first need
}

// fastScratch holds what only some payloads need: a buffer for strings with
// escapes and the names of members that no property declares, to find
// duplicates.
type fastScratch struct {
	buf  []byte // the last string decoded
	kbuf []byte // decoded member names, for the run
	keys []span
	set  map[[2]uint64]struct{}
	objs uint64
}

// span locates a member name: in the payload, or in kbuf if it was escaped.
type span struct {
	start, end int
	decoded    bool
}

var (
	scratchPool = sync.Pool{New: func() any { return &fastScratch{} }}
	keySeed     = maphash.MakeSeed()
)

// manyKeys is the number of undeclared members of one object beyond which
// duplicates are found through a hash set instead of by comparing each pair.
const manyKeys = 16

func (r *fastRun) scratch() *fastScratch {
	if r.sc == nil {
		r.sc = scratchPool.Get().(*fastScratch)
	}
	return r.sc
}

func (r *fastRun) release() {
	sc := r.sc
	if sc == nil {
		return
	}
	r.sc = nil
	if cap(sc.buf) > 64<<10 {
		sc.buf = nil
	}
	if cap(sc.kbuf) > 64<<10 {
		sc.kbuf = nil
	}
	sc.buf, sc.kbuf, sc.keys = sc.buf[:0], sc.kbuf[:0], sc.keys[:0]
	if len(sc.set) > 0 {
		if len(sc.set) > 4096 {
			sc.set = nil
		} else {
			clear(sc.set)
		}
	}
	scratchPool.Put(sc)
}

// check validates payload; maxBytes is the slow path's size limit.
func (fv *fastValidator) check(payload []byte, maxBytes int) (v verdict) {
	if len(payload) > maxBytes {
		return fastBail
	}
	r := fastRun{data: payload}
	defer func() {
		if recover() != nil {
			v = fastBail // a custom format checker panicked, say
		}
		r.release()
	}()
	i := skipWS(payload, 0)
	end, res := r.value(fv.root, i, 0)
	if res != fastValid {
		return res
	}
	if skipWS(payload, end) != len(payload) {
		return fastBail
	}
	return fastValid
}

func skipWS(d []byte, i int) int {
	for i < len(d) {
		switch d[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value validates the value at d[i:] against n and returns its end.
func (r *fastRun) value(n *fastNode, i, depth int) (int, verdict) {
	for n.kind == kindRef {
		n = n.ref
	}
	switch n.kind {
	case kindTrue:
		return r.skip(i, depth)
	case kindFalse:
		return 0, fastInvalid
	}
	d := r.data
	if depth > fastMaxDepth || i >= len(d) {
		return 0, fastBail
	}
	var (
		end int
		res verdict
	)
	switch c := d[i]; c {
	case '{':
		if n.types != 0 && n.types&tObject == 0 {
			return 0, fastInvalid
		}
		if n.objChecks {
			end, res = r.object(n, i, depth)
		} else {
			end, res = r.skip(i, depth)
		}
		if res == fastValid && (n.enum != nil || n.cnst != nil) {
			res = compositeEnum(n)
		}
	case '[':
		if n.types != 0 && n.types&tArray == 0 {
			return 0, fastInvalid
		}
		if n.arrChecks {
			end, res = r.array(n, i, depth)
		} else {
			end, res = r.skip(i, depth)
		}
		if res == fastValid && (n.enum != nil || n.cnst != nil) {
			res = compositeEnum(n)
		}
	case '"':
		if n.types != 0 && n.types&tString == 0 {
			return 0, fastInvalid
		}
		end, res = r.str(n, i)
	case 't', 'f', 'n':
		lit, t := "null", tNull
		switch c {
		case 't':
			lit, t = "true", tBoolean
		case 'f':
			lit, t = "false", tBoolean
		}
		if n.types != 0 && n.types&t == 0 {
			return 0, fastInvalid
		}
		if len(d)-i < len(lit) || string(d[i:i+len(lit)]) != lit {
			return 0, fastBail
		}
		end, res = i+len(lit), fastValid
		if !scalarEnum(n.enum, c, nil) || !scalarEnum(n.cnst, c, nil) {
			res = fastInvalid
		}
	default:
		end, res = r.number(n, i)
	}
	if res != fastValid {
		return 0, res
	}
	if res = r.applicators(n, i, depth); res != fastValid {
		return 0, res
	}
	return end, fastValid
}

// compositeEnum judges an object or array against enum/const: it cannot
// equal a scalar; the fast path does not compare composite values.
func compositeEnum(n *fastNode) verdict {
	if (n.enum != nil && n.enum.composite) || (n.cnst != nil && n.cnst.composite) {
		return fastBail
	}
	return fastInvalid
}

// scalarEnum reports whether a scalar is among e's values (true when e is
// nil). c is the first byte of the literal; s is the decoded string for a
// string.
func scalarEnum(e *fastEnum, c byte, s []byte) bool {
	if e == nil {
		return true
	}
	switch c {
	case 'n':
		return e.null
	case 't':
		return e.yes
	case 'f':
		return e.no
	}
	for _, x := range e.strs {
		if string(s) == x {
			return true
		}
	}
	return false
}

// applicators runs allOf, anyOf, oneOf and not over the value at d[i:],
// which the caller has scanned completely. Subschemas count as a level of
// depth, so that no schema can make the fast path recurse without bound.
func (r *fastRun) applicators(n *fastNode, i, depth int) verdict {
	depth++
	for _, b := range n.allOf {
		if _, res := r.value(b, i, depth); res != fastValid {
			return res
		}
	}
	if len(n.anyOf) > 0 {
		res := fastInvalid
		for _, b := range n.anyOf {
			_, rb := r.value(b, i, depth)
			if rb == fastValid {
				res = fastValid
				break
			}
			if rb == fastBail {
				res = fastBail
			}
		}
		if res != fastValid {
			return res
		}
	}
	if len(n.oneOf) > 0 {
		valid, bail := 0, false
		for _, b := range n.oneOf {
			switch _, rb := r.value(b, i, depth); rb {
			case fastValid:
				valid++
			case fastBail:
				bail = true
			}
		}
		switch {
		case valid > 1:
			return fastInvalid
		case bail:
			return fastBail
		case valid == 0:
			return fastInvalid
		}
	}
	if n.not != nil {
		switch _, rb := r.value(n.not, i, depth); rb {
		case fastValid:
			return fastInvalid
		case fastBail:
			return fastBail
		}
	}
	return fastValid
}

// number validates a number literal (or bails on anything else).
func (r *fastRun) number(n *fastNode, i int) (int, verdict) {
	end, v, ok := parseNumber(r.data, i)
	if !ok || v.tooBig() {
		return 0, fastBail
	}
	if n.types != 0 && n.types&tNumber == 0 && (n.types&tInteger == 0 || !v.isInt()) {
		return 0, fastInvalid
	}
	if n.numChecks {
		if n.maximum != nil && cmpDecimal(&v, n.maximum) > 0 ||
			n.exMax != nil && cmpDecimal(&v, n.exMax) >= 0 ||
			n.minimum != nil && cmpDecimal(&v, n.minimum) < 0 ||
			n.exMin != nil && cmpDecimal(&v, n.exMin) <= 0 {
			return 0, fastInvalid
		}
		if n.multiple != nil {
			is, ok := multipleOf(&v, n.multiple)
			if !ok {
				return 0, fastBail
			}
			if !is {
				return 0, fastInvalid
			}
		}
		if n.hasFormat && gojsonschema.FormatCheckers.Has(n.format) {
			// gojsonschema hands the checker a *big.Rat (the built-in
			// checkers refuse it; one a user added may not).
			x, ok := new(big.Rat).SetString(string(r.data[i:end]))
			if !ok {
				return 0, fastBail
			}
			if !gojsonschema.FormatCheckers.IsFormat(n.format, x) {
				return 0, fastInvalid
			}
		}
	}
	if n.enum != nil || n.cnst != nil {
		f, err := strconv.ParseFloat(string(r.data[i:end]), 64)
		if err != nil {
			return 0, fastBail
		}
		bits := math.Float64bits(f)
		if !numEnum(n.enum, bits) || !numEnum(n.cnst, bits) {
			return 0, fastInvalid
		}
	}
	return end, fastValid
}

func numEnum(e *fastEnum, bits uint64) bool {
	if e == nil {
		return true
	}
	for _, x := range e.nums {
		if x == bits {
			return true
		}
	}
	return false
}

// str validates a string.
func (r *fastRun) str(n *fastNode, i int) (int, verdict) {
	end, esc, ok := r.scanString(i)
	if !ok {
		return 0, fastBail
	}
	if !n.strChecks && n.enum == nil && n.cnst == nil {
		return end, fastValid
	}
	s := r.data[i+1 : end-1]
	if esc {
		sc := r.scratch()
		if sc.buf, ok = unescape(sc.buf[:0], s); !ok {
			return 0, fastBail
		}
		s = sc.buf
	}
	if n.minLen >= 0 || n.maxLen >= 0 {
		runes := utf8.RuneCount(s)
		if n.minLen >= 0 && runes < n.minLen || n.maxLen >= 0 && runes > n.maxLen {
			return 0, fastInvalid
		}
	}
	if n.pattern != nil && !n.pattern.Match(s) {
		return 0, fastInvalid
	}
	if !scalarEnum(n.enum, '"', s) || !scalarEnum(n.cnst, '"', s) {
		return 0, fastInvalid
	}
	if n.hasFormat && gojsonschema.FormatCheckers.Has(n.format) &&
		!gojsonschema.FormatCheckers.IsFormat(n.format, string(s)) {
		return 0, fastInvalid
	}
	return end, fastValid
}

// strSafe marks the bytes a string holds as they are: not a control
// character, quote or backslash, and ASCII.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString scans the string at d[i] == '"' and returns the index after
// its closing quote and whether it holds escapes. ok is false for a
// malformed string and for invalid UTF-8.
func (r *fastRun) scanString(i int) (end int, esc, ok bool) {
	d := r.data
	j := i + 1
	ascii := true
	for {
		j = skipSafe(d, j)
		if j >= len(d) {
			return 0, false, false
		}
		switch c := d[j]; {
		case c == '"':
			if !ascii && !utf8.Valid(d[i+1:j]) {
				return 0, false, false
			}
			return j + 1, esc, true
		case c == '\\':
			esc = true
			if j+1 >= len(d) {
				return 0, false, false
			}
			switch d[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(d) {
					return 0, false, false
				}
				for _, h := range d[j+2 : j+6] {
					if unhex(h) < 0 {
						return 0, false, false
					}
				}
				j += 6
			default:
				return 0, false, false
			}
		case c < 0x20:
			return 0, false, false
		default:
			ascii = false
			j++
		}
	}
}

// skipSafe returns the index of the first byte from j on that strSafe
// does not mark, eight bytes at a time.
func skipSafe(d []byte, j int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for j+8 <= len(d) {
		x := binary.LittleEndian.Uint64(d[j:])
		q := x ^ ('"' * ones)
		b := x ^ ('\\' * ones)
		// The high bit of a byte is set where the byte is '"' or '\\'
		// (zero after the xor), a control character or not ASCII; the
		// lowest one set is exact.
		m := ((q - ones) &^ q) | ((b - ones) &^ b) | ((x - 0x20*ones) &^ x) | x
		if m &= highs; m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
		j += 8
	}
	for j < len(d) && strSafe[d[j]] {
		j++
	}
	return j
}

func unhex(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c - 'a' + 10)
	case c >= 'A' && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

func hex4(b []byte) rune {
	return unhex(b[0])<<12 | unhex(b[1])<<8 | unhex(b[2])<<4 | unhex(b[3])
}

// unescape appends the body of a scanned string to b, decoded as
// encoding/json does. ok is false for a surrogate escape that is not half
// of a valid pair (encoding/json writes U+FFFD for it).
func unescape(b, s []byte) ([]byte, bool) {
	for k := 0; k < len(s); {
		c := s[k]
		if c != '\\' {
			b = append(b, c)
			k++
			continue
		}
		switch s[k+1] {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			rr := hex4(s[k+2:])
			k += 6
			if utf16.IsSurrogate(rr) {
				if k+6 > len(s) || s[k] != '\\' || s[k+1] != 'u' {
					return nil, false
				}
				dec := utf16.DecodeRune(rr, hex4(s[k+2:]))
				if dec == utf8.RuneError {
					return nil, false
				}
				rr = dec
				k += 6
			}
			b = utf8.AppendRune(b, rr)
			continue
		default: // '"', '\\', '/'
			b = append(b, s[k+1])
		}
		k += 2
	}
	return b, true
}

// array validates an array.
func (r *fastRun) array(n *fastNode, i, depth int) (int, verdict) {
	d := r.data
	i = skipWS(d, i+1)
	count := 0
	if i < len(d) && d[i] == ']' {
		i++
	} else {
		for {
			var (
				end int
				res verdict
			)
			if n.items != nil {
				end, res = r.value(n.items, i, depth+1)
			} else {
				end, res = r.skip(i, depth+1)
			}
			if res != fastValid {
				return 0, res
			}
			count++
			i = skipWS(d, end)
			if i < len(d) && d[i] == ',' {
				i = skipWS(d, i+1)
				continue
			}
			if i < len(d) && d[i] == ']' {
				i++
				break
			}
			return 0, fastBail
		}
	}
	if n.minItems >= 0 && count < n.minItems || n.maxItems >= 0 && count > n.maxItems {
		return 0, fastInvalid
	}
	return i, fastValid
}

// lookupName returns the index of a member name among n.names, or -1.
func (n *fastNode) lookupName(key []byte) int {
	if n.lookup != nil {
		if i, ok := n.lookup[string(key)]; ok {
			return i
		}
		return -1
	}
	for i := range n.names {
		if n.names[i].name == string(key) {
			return i
		}
	}
	return -1
}

// object validates an object.
func (r *fastRun) object(n *fastNode, i, depth int) (int, verdict) {
	d := r.data
	i = skipWS(d, i+1)
	var seen [2]uint64
	count, undeclared := 0, 0
	base, obj := -1, uint64(0) // undeclared names in the scratch
	result := fastValid
	defer func() {
		if base >= 0 {
			r.sc.keys = r.sc.keys[:base]
		}
	}()
	if i < len(d) && d[i] == '}' {
		i++
	} else {
		for {
			if i >= len(d) || d[i] != '"' {
				return 0, fastBail
			}
			ke, esc, ok := r.scanString(i)
			if !ok {
				return 0, fastBail
			}
			key := span{start: i + 1, end: ke - 1}
			if esc {
				sc := r.scratch()
				start := len(sc.kbuf)
				if sc.kbuf, ok = unescape(sc.kbuf, d[key.start:key.end]); !ok {
					return 0, fastBail
				}
				key = span{start: start, end: len(sc.kbuf), decoded: true}
			}
			name := r.name(key)
			i = skipWS(d, ke)
			if i >= len(d) || d[i] != ':' {
				return 0, fastBail
			}
			i = skipWS(d, i+1)
			count++
			var sub *fastNode
			idx := n.lookupName(name)
			if idx >= 0 {
				bit := uint64(1) << (idx & 63)
				if seen[idx>>6]&bit != 0 {
					return 0, fastBail // a duplicate: encoding/json keeps the last
				}
				seen[idx>>6] |= bit
			}
			if idx >= 0 && n.names[idx].prop {
				sub = n.names[idx].node
			} else {
				if n.addlDeny {
					return 0, fastInvalid // present whatever its value
				}
				if base < 0 {
					sc := r.scratch()
					base = len(sc.keys)
					sc.objs++
					obj = sc.objs
				}
				if r.duplicate(key, base, obj, undeclared) {
					return 0, fastBail
				}
				undeclared++
				sub = n.addl
			}
			var (
				end int
				res = fastInvalid
			)
			if sub != nil && result == fastValid {
				end, res = r.value(sub, i, depth+1)
				if res == fastBail {
					return 0, fastBail
				}
			}
			if res != fastValid {
				// Unjudged, or failed: scan on, so that a later duplicate
				// of this name is found before saying invalid.
				if sub != nil {
					result = fastInvalid
				}
				if end, res = r.skip(i, depth+1); res != fastValid {
					return 0, fastBail
				}
			}
			i = skipWS(d, end)
			if i < len(d) && d[i] == ',' {
				i = skipWS(d, i+1)
				continue
			}
			if i < len(d) && d[i] == '}' {
				i++
				break
			}
			return 0, fastBail
		}
	}
	if result != fastValid {
		return 0, result
	}
	if seen[0]&n.required[0] != n.required[0] || seen[1]&n.required[1] != n.required[1] {
		return 0, fastInvalid
	}
	if n.minProps >= 0 && count < n.minProps || n.maxProps >= 0 && count > n.maxProps {
		return 0, fastInvalid
	}
	return i, fastValid
}

// name returns the (decoded) member name at k.
func (r *fastRun) name(k span) []byte {
	if k.decoded {
		return r.sc.kbuf[k.start:k.end]
	}
	return r.data[k.start:k.end]
}

// duplicate reports whether the undeclared member name key repeats one of
// the same object (scratch keys from base on), and records it. Past
// manyKeys names, names are kept in a hash set; a hash collision counts as
// a duplicate (the slow path decides).
func (r *fastRun) duplicate(key span, base int, obj uint64, undeclared int) bool {
	sc := r.sc
	name := r.name(key)
	switch {
	case undeclared < manyKeys:
		for _, k := range sc.keys[base:] {
			if string(r.name(k)) == string(name) {
				return true
			}
		}
		sc.keys = append(sc.keys, key)
		return false
	case undeclared == manyKeys:
		if sc.set == nil {
			sc.set = make(map[[2]uint64]struct{})
		}
		for _, k := range sc.keys[base:] {
			sc.set[[2]uint64{obj, maphash.Bytes(keySeed, r.name(k))}] = struct{}{}
		}
	}
	h := [2]uint64{obj, maphash.Bytes(keySeed, name)}
	if _, dup := sc.set[h]; dup {
		return true
	}
	sc.set[h] = struct{}{}
	return false
}

// skip scans one value without a schema: the same grammar and limits,
// without looking for duplicate members (nothing reads them).
func (r *fastRun) skip(i, depth int) (int, verdict) {
	d := r.data
	if depth > fastMaxDepth || i >= len(d) {
		return 0, fastBail
	}
	switch d[i] {
	case '{', '[':
		closing := byte('}')
		if d[i] == '[' {
			closing = ']'
		}
		i = skipWS(d, i+1)
		if i < len(d) && d[i] == closing {
			return i + 1, fastValid
		}
		for {
			if closing == '}' {
				if i >= len(d) || d[i] != '"' {
					return 0, fastBail
				}
				ke, _, ok := r.scanString(i)
				if !ok {
					return 0, fastBail
				}
				i = skipWS(d, ke)
				if i >= len(d) || d[i] != ':' {
					return 0, fastBail
				}
				i = skipWS(d, i+1)
			}
			end, res := r.skip(i, depth+1)
			if res != fastValid {
				return 0, fastBail
			}
			i = skipWS(d, end)
			if i < len(d) && d[i] == ',' {
				i = skipWS(d, i+1)
				continue
			}
			if i < len(d) && d[i] == closing {
				return i + 1, fastValid
			}
			return 0, fastBail
		}
	case '"':
		end, _, ok := r.scanString(i)
		if !ok {
			return 0, fastBail
		}
		return end, fastValid
	case 't':
		return literal(d, i, "true")
	case 'f':
		return literal(d, i, "false")
	case 'n':
		return literal(d, i, "null")
	}
	end, v, ok := parseNumber(d, i)
	if !ok || v.tooBig() {
		return 0, fastBail
	}
	return end, fastValid
}

func literal(d []byte, i int, lit string) (int, verdict) {
	if len(d)-i < len(lit) || string(d[i:i+len(lit)]) != lit {
		return 0, fastBail
	}
	return i + len(lit), fastValid
}
