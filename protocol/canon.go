package protocol

import (
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// canon writes the RFC 8785 (JCS) canonical form of a JSON value straight
// from its bytes, in one pass of the strict scanner: no generic maps, no
// re-decoding. Objects are written member by member in document order and
// then reordered in place by sorting (key, range) records, so a value is
// read once however deep it sits. The buffers are pooled.
//
// For Verify it also finds the signature: with sig set, the member
// security.auth.sig of the top-level object is left out of the output and
// security.auth's scheme, kid and sig are recorded.
type canon struct {
	sc   scanner
	out  []byte
	tmp  []byte   // the members of the object being reordered
	mems []member // a stack: the members of every open object

	sig                   bool // find and drop security.auth.sig
	secKind, authKind     byte // kind of the first byte of security and security.auth, 0 if absent
	scheme, kid, sigValue []byte
	schemeBad, kidBad     bool // scheme or kid present but not a string
	sigStr                bool
}

type member struct {
	key        string // decoded key; may share the input's memory
	start, end int    // its `"key":value` in out
	at         int    // where the value starts in the input, for errors
}

// Where a value sits, for finding security.auth.sig.
const (
	atOther = iota
	atTop
	atSecurity
	atAuth
)

var canonPool = sync.Pool{New: func() any { return new(canon) }}

func getCanon(data []byte) *canon {
	c := canonPool.Get().(*canon)
	c.sc = scanner{data: data, maxDepth: DefaultMaxDepth, borrow: true}
	return c
}

// put returns c to the pool without references to the input.
func (c *canon) put() {
	clear(c.mems[:cap(c.mems)])
	const keep = 1 << 20 // a huge message does not pin its buffers
	if cap(c.out) > keep || cap(c.tmp) > keep {
		*c = canon{}
	} else {
		*c = canon{out: c.out[:0], tmp: c.tmp[:0], mems: c.mems[:0]}
	}
	canonPool.Put(c)
}

// run canonicalises the whole input into c.out.
func (c *canon) run() *Error {
	if len(c.sc.data) == 0 {
		return &Error{Code: CodeInvalidJSON, Offset: 0, Detail: "empty JSON"}
	}
	where := atOther
	if c.sig {
		where = atTop
	}
	if err := c.value(0, where); err != nil {
		return err
	}
	if c.sc.peek() != 0 || c.sc.pos < len(c.sc.data) {
		return &Error{Code: CodeInvalidJSON, Offset: int64(c.sc.pos), Detail: "data after the JSON value"}
	}
	return nil
}

func (c *canon) value(depth, where int) *Error {
	sc := &c.sc
	switch ch := sc.peek(); {
	case ch == '{':
		if depth >= sc.maxDepth {
			return sc.err(CodeTooDeep, "nested deeper than %d", sc.maxDepth)
		}
		return c.object(depth, where)
	case ch == '[':
		if depth >= sc.maxDepth {
			return sc.err(CodeTooDeep, "nested deeper than %d", sc.maxDepth)
		}
		c.out = append(c.out, '[')
		err := sc.array(func(i int) *Error {
			if i > 0 {
				c.out = append(c.out, ',')
			}
			return prefixIndex(c.value(depth+1, atOther), i)
		})
		c.out = append(c.out, ']')
		return err
	case ch == '"':
		a, b, esc, err := sc.strRange()
		if err != nil {
			return err
		}
		if !esc {
			// No escapes: the checked input is already canonical.
			c.out = append(c.out, sc.data[a-1:b+1]...)
			return nil
		}
		// Decode, then escape with the encoder's one string writer: JCS
		// escapes only '"', '\\' and control characters, with the short
		// forms, exactly as writer.str does.
		var w writer // cannot fail: strRange checked UTF-8 and surrogates
		c.out = w.str(c.out, unescape(sc.data[a:b]))
		return nil
	case ch == 't':
		c.out = append(c.out, "true"...)
		return sc.literal("true")
	case ch == 'f':
		c.out = append(c.out, "false"...)
		return sc.literal("false")
	case ch == 'n':
		c.out = append(c.out, "null"...)
		return sc.literal("null")
	case ch == '-' || ch >= '0' && ch <= '9':
		start := sc.pos
		a, b, err := sc.number()
		if err != nil {
			return err
		}
		var ok bool
		if c.out, ok = appendCanonNumber(c.out, sc.data[a:b]); !ok {
			sc.pos = start
			return sc.err(CodeInvalidJSON, "number %s is out of the range of a double", sc.data[a:b])
		}
		return nil
	case ch == 0 && sc.pos >= len(sc.data):
		return sc.err(CodeInvalidJSON, "unexpected end of input")
	default:
		return sc.err(CodeInvalidJSON, "unexpected %q", ch)
	}
}

func (c *canon) object(depth, where int) *Error {
	sc := &c.sc
	base := len(c.mems)
	open := len(c.out)
	c.out = append(c.out, '{')
	// Duplicate keys are found after the sort, as neighbours: the
	// scanner's key set would build a map for an object this large.
	err := sc.objectDedup(func(k string) *Error {
		keyAt := sc.pos
		child := atOther
		switch {
		case where == atTop && k == "security":
			c.secKind = sc.data[sc.pos]
			child = atSecurity
		case where == atSecurity && k == "auth":
			c.authKind = sc.data[sc.pos]
			child = atAuth
		case where == atAuth:
			switch k {
			case "sig":
				// Left out of the signing input; recorded.
				c.sigStr = sc.data[sc.pos] == '"'
				a, b, err := sc.skip(depth + 1)
				if c.sigStr && err == nil {
					c.sigValue = sc.data[a:b]
				}
				return prefix(err, k)
			case "scheme":
				c.schemeBad = sc.data[sc.pos] != '"'
				c.scheme = c.stringAt()
			case "kid":
				c.kidBad = sc.data[sc.pos] != '"'
				c.kid = c.stringAt()
			}
		}
		start := len(c.out)
		var w writer // cannot fail: the scanner checked the key
		c.out = append(w.str(c.out, k), ':')
		if err := c.value(depth+1, child); err != nil {
			return prefix(err, k)
		}
		c.mems = append(c.mems, member{key: k, start: start, end: len(c.out), at: keyAt})
		return nil
	}, false)
	if err != nil {
		c.mems = c.mems[:base]
		return err
	}
	ms := c.mems[base:]
	if len(ms) > 1 && !slices.IsSortedFunc(ms, byUTF16) {
		slices.SortFunc(ms, byUTF16)
	}
	for i := 1; i < len(ms); i++ {
		if ms[i].key == ms[i-1].key {
			sc.pos = max(ms[i].at, ms[i-1].at)
			e := sc.err(CodeDuplicateKey, "duplicate key %q", ms[i].key)
			e.Path = "/" + escapePointer(ms[i].key)
			c.mems = c.mems[:base]
			return e
		}
	}
	// Rewrite the members in order, with commas.
	body := open + 1
	c.tmp = append(c.tmp[:0], c.out[body:]...)
	c.out = c.out[:body]
	for i, m := range ms {
		if i > 0 {
			c.out = append(c.out, ',')
		}
		c.out = append(c.out, c.tmp[m.start-body:m.end-body]...)
	}
	c.out = append(c.out, '}')
	clear(ms)
	c.mems = c.mems[:base]
	return nil
}

// stringAt returns the raw content of the string value the scanner stands
// on (escapes kept), or nil for any other kind. It does not move the scanner.
func (c *canon) stringAt() []byte {
	sc := c.sc
	if sc.peek() != '"' {
		return nil
	}
	a, b, _, err := sc.strRange()
	if err != nil {
		return nil
	}
	return c.sc.data[a:b]
}

func byUTF16(x, y member) int { return compareUTF16(x.key, y.key) }

// compareUTF16 orders strings by their UTF-16 code units (RFC 8785 §3.2.3).
// UTF-8 byte order is code point order, which differs from UTF-16 order
// only between U+E000..U+FFFF and the supplementary planes.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] == b[i] {
			continue
		}
		j := i
		for j > 0 && a[j]&0xC0 == 0x80 {
			j--
		}
		ra, _ := utf8.DecodeRuneInString(a[j:])
		rb, _ := utf8.DecodeRuneInString(b[j:])
		ua, ub := utf16Unit(ra), utf16Unit(rb)
		if ua != ub {
			if ua < ub {
				return -1
			}
			return 1
		}
		// Same first unit: two supplementary runes; code point order is
		// UTF-16 order there.
		if ra < rb {
			return -1
		}
		return 1
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

func utf16Unit(r rune) rune {
	if r >= 0x10000 {
		r1, _ := utf16.EncodeRune(r)
		return r1
	}
	return r
}

// appendCanonNumber writes a checked JSON number in the ECMAScript form
// RFC 8785 §3.2.2.3 requires. It reports false for a number outside the
// range of a double.
func appendCanonNumber(b, raw []byte) ([]byte, bool) {
	// Integers of up to 15 digits are exact doubles printed as they are.
	if d := raw[0] == '-'; len(raw)-btoi(d) <= 15 && raw[btoi(d)] != '0' {
		plain := true
		for _, c := range raw[btoi(d):] {
			if c < '0' || c > '9' {
				plain = false
				break
			}
		}
		if plain {
			return append(b, raw...), true
		}
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(raw), len(raw)), 64)
	if err != nil || math.IsInf(f, 0) {
		return b, false
	}
	return appendES(b, f), true
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

// appendES formats a finite double as ECMAScript's Number::toString does.
func appendES(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0') // -0 too
	}
	if f < 0 {
		b = append(b, '-')
		f = -f
	}
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // d[.ddd]e±XX, shortest
	e := 0
	for s[e] != 'e' {
		e++
	}
	var dbuf [24]byte
	digits := append(dbuf[:0], s[0])
	if e > 1 {
		digits = append(digits, s[2:e]...)
	}
	exp := 0
	for _, c := range s[e+2:] {
		exp = exp*10 + int(c-'0')
	}
	if s[e+1] == '-' {
		exp = -exp
	}
	n, k := exp+1, len(digits)
	switch {
	case k <= n && n <= 21:
		b = append(b, digits...)
		for range n - k {
			b = append(b, '0')
		}
	case 0 < n && n <= 21:
		b = append(b, digits[:n]...)
		b = append(b, '.')
		b = append(b, digits[n:]...)
	case -6 < n && n <= 0:
		b = append(b, '0', '.')
		for range -n {
			b = append(b, '0')
		}
		b = append(b, digits...)
	default:
		b = append(b, digits[0])
		if k > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		if n-1 > 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, int64(n-1), 10)
	}
	return b
}
