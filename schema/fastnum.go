package schema

// Exact decimal arithmetic on JSON number literals for the fast path.
// gojsonschema compares numbers as big.Rat values made from the literal;
// these helpers decide the same comparisons on the literal's digits without
// allocating.

// decimal is a JSON number literal read as 0.d₁d₂…dₙ × 10^e, where the
// significant digits d₁…dₙ are the digits of ip followed by those of fp,
// from index f, without leading or trailing zeros. n == 0 is zero (of
// either sign: big.Rat has no negative zero).
type decimal struct {
	neg    bool
	ip, fp []byte // integer and fraction digits as written
	f, n   int    // first significant digit and count, in ip+fp
	e      int
}

// Limits of the literals the fast path judges. Anything beyond goes to the
// slow path, which applies maxNumberLen and maxExponent (payload.go).
const fastMaxExpDigits = 3 // exponents up to ±999 (maxExponent is 1000)

// maxFloat is math.MaxFloat64 as encoding/json writes it, a little below
// its exact value.
var maxFloat = func() decimal {
	_, d, _ := parseNumber([]byte("1.7976931348623157e308"), 0)
	return d
}()

// tooBig reports whether |v| might be beyond float64: encoding/json turns
// every number into a float64 for enum and const (and fails beyond it).
func (v *decimal) tooBig() bool {
	if v.e != maxFloat.e {
		return v.e > maxFloat.e
	}
	abs := *v
	abs.neg = false
	return cmpDecimal(&abs, &maxFloat) > 0
}

// parseNumber reads the JSON number literal at d[i:] with encoding/json's
// grammar, -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. ok is false for
// a malformed literal and for one beyond the limits above.
func parseNumber(d []byte, i int) (end int, v decimal, ok bool) {
	j := i
	if j < len(d) && d[j] == '-' {
		v.neg = true
		j++
	}
	if j >= len(d) {
		return 0, v, false
	}
	is := j
	switch c := d[j]; {
	case c == '0':
		j++
	case c >= '1' && c <= '9':
		for j < len(d) && isDigit(d[j]) {
			j++
		}
	default:
		return 0, v, false
	}
	v.ip = d[is:j]
	if j < len(d) && d[j] == '.' {
		j++
		fs := j
		for j < len(d) && isDigit(d[j]) {
			j++
		}
		if j == fs {
			return 0, v, false
		}
		v.fp = d[fs:j]
	}
	exp := 0
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		j++
		eneg := false
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			eneg = d[j] == '-'
			j++
		}
		es := j
		for j < len(d) && d[j] == '0' {
			j++
		}
		sig := j
		for j < len(d) && isDigit(d[j]) {
			j++
		}
		if j == es || j-sig > fastMaxExpDigits {
			return 0, v, false
		}
		for _, c := range d[sig:j] {
			exp = exp*10 + int(c-'0')
		}
		if eneg {
			exp = -exp
		}
	}
	if j-i > maxNumberLen {
		return 0, v, false
	}
	// Significant digits.
	first := -1
	if v.ip[0] != '0' {
		first = 0
	} else {
		for k, c := range v.fp {
			if c != '0' {
				first = len(v.ip) + k
				break
			}
		}
	}
	if first < 0 {
		return j, decimal{neg: v.neg}, true // zero
	}
	last := -1
	for k := len(v.fp) - 1; k >= 0; k-- {
		if v.fp[k] != '0' {
			last = len(v.ip) + k
			break
		}
	}
	if last < 0 {
		for k := len(v.ip) - 1; k >= 0; k-- {
			if v.ip[k] != '0' {
				last = k
				break
			}
		}
	}
	v.f, v.n = first, last-first+1
	v.e = len(v.ip) - first + exp
	return j, v, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digit returns the k-th significant digit (0-based) as a value 0–9.
func (v *decimal) digit(k int) byte {
	p := v.f + k
	if p < len(v.ip) {
		return v.ip[p] - '0'
	}
	return v.fp[p-len(v.ip)] - '0'
}

func (v *decimal) sign() int {
	switch {
	case v.n == 0:
		return 0
	case v.neg:
		return -1
	}
	return 1
}

// isInt reports whether the value is an integer, as big.Rat.IsInt does.
func (v *decimal) isInt() bool { return v.n == 0 || v.e >= v.n }

// cmpDecimal compares a and b exactly: -1, 0 or +1.
func cmpDecimal(a, b *decimal) int {
	sa, sb := a.sign(), b.sign()
	if sa != sb {
		if sa < sb {
			return -1
		}
		return 1
	}
	if sa == 0 {
		return 0
	}
	c := 0
	switch {
	case a.e != b.e:
		c = 1
		if a.e < b.e {
			c = -1
		}
	default:
		for k := 0; k < a.n && k < b.n && c == 0; k++ {
			da, db := a.digit(k), b.digit(k)
			if da < db {
				c = -1
			} else if da > db {
				c = 1
			}
		}
		if c == 0 && a.n != b.n {
			c = 1
			if a.n < b.n {
				c = -1
			}
		}
	}
	return c * sa
}

// multipleOf decides whether v / m is an integer (m > 0), exactly.
// ok is false when m has too many digits at v's scale to decide cheaply.
func multipleOf(v, m *decimal) (is, ok bool) {
	if v.n == 0 {
		return true, true
	}
	// v = V·10^av and m = M·10^bm with V, M integers of n digits.
	av, bm := v.e-v.n, m.e-m.n
	s := min(av, bm)
	if m.n+(bm-s) > 17 {
		return false, false
	}
	var mod uint64
	for k := 0; k < m.n; k++ {
		mod = mod*10 + uint64(m.digit(k))
	}
	for range bm - s {
		mod *= 10
	}
	var r uint64
	for k := 0; k < v.n; k++ {
		r = (r*10 + uint64(v.digit(k))) % mod
	}
	for z := av - s; z > 0 && r != 0; z-- {
		r = r * 10 % mod
	}
	return r == 0, true
}
