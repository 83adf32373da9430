package schema

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// A generator of random schemas and payloads from the keywords the fast
// path implements, for a differential test that explores combinations
// byte-level fuzzing of fixed schemas rarely reaches: applicators over
// objects with duplicate or escaped members, enums against bounds, $ref
// recursion, and so on.

type fastGen struct {
	r *rand.Rand
}

var (
	genNames   = []string{"a", "b", "c", "é", "a/b", ""}
	genNumbers = []string{"0", "-0", "1", "-1", "2", "3", "1.0", "1e2", "0.5", "-0.5", "2.5", "0.01", "1e-2", "100", "9007199254740993", "1.5e1", "7", "-3.25", "1e300", "1e-300"}
	genStrings = []string{``, `a`, `ab`, `abc`, `é`, `ée`, `😀`, `a b`, `1`, `x@y.z`, `127.0.0.1`, `2026-01-02`, `::1`, `aaaa`, `Ab`}
	genPattern = []string{`^a`, `b$`, `^[a-z]*$`, `\d`, `é`, `^.{2}$`, `^\S*$`}
	genFormats = []string{"email", "ipv4", "ipv6", "date", "date-time", "uri", "hostname", "made-up"}
	genTypes   = []string{"null", "boolean", "object", "array", "number", "integer", "string"}
)

func (g *fastGen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }
func (g *fastGen) chance(p float64) bool   { return g.r.Float64() < p }

// scalar returns a random JSON scalar literal.
func (g *fastGen) scalar() string {
	switch g.r.IntN(6) {
	case 0:
		return "null"
	case 1:
		return []string{"true", "false"}[g.r.IntN(2)]
	case 2, 3:
		return g.pick(genNumbers)
	}
	b, _ := json.Marshal(g.pick(genStrings))
	return string(b)
}

// schema returns a random schema document.
func (g *fastGen) schema(depth int, defs int) string {
	if depth <= 0 || g.chance(0.1) {
		if g.chance(0.5) {
			return []string{"true", "false", "{}"}[g.r.IntN(3)]
		}
		return fmt.Sprintf(`{"type":%q}`, g.pick(genTypes))
	}
	var kw []string
	add := func(k, v string) { kw = append(kw, fmt.Sprintf("%q:%s", k, v)) }
	sub := func() string { return g.schema(depth-1, defs) }
	if g.chance(0.5) {
		if g.chance(0.7) {
			add("type", fmt.Sprintf("%q", g.pick(genTypes)))
		} else {
			seen := map[string]bool{}
			var ts []string
			for range 1 + g.r.IntN(3) {
				if t := g.pick(genTypes); !seen[t] {
					seen[t] = true
					ts = append(ts, fmt.Sprintf("%q", t))
				}
			}
			add("type", "["+strings.Join(ts, ",")+"]")
		}
	}
	if g.chance(0.3) {
		seen := map[string]bool{}
		var ps []string
		for range 1 + g.r.IntN(3) {
			if n := g.pick(genNames); !seen[n] {
				seen[n] = true
				ps = append(ps, fmt.Sprintf("%q:%s", n, sub()))
			}
		}
		add("properties", "{"+strings.Join(ps, ",")+"}")
	}
	if g.chance(0.25) {
		seen := map[string]bool{}
		var rs []string
		for range 1 + g.r.IntN(2) {
			if n := g.pick(genNames); !seen[n] {
				seen[n] = true
				rs = append(rs, fmt.Sprintf("%q", n))
			}
		}
		add("required", "["+strings.Join(rs, ",")+"]")
	}
	if g.chance(0.2) {
		if g.chance(0.5) {
			add("additionalProperties", []string{"true", "false"}[g.r.IntN(2)])
		} else {
			add("additionalProperties", sub())
		}
	}
	minmax := func(lo, hi string) {
		if g.chance(0.15) {
			a := g.r.IntN(3)
			add(lo, fmt.Sprint(a))
			if g.chance(0.5) {
				add(hi, fmt.Sprint(a+g.r.IntN(3)))
			}
		} else if g.chance(0.1) {
			add(hi, fmt.Sprint(g.r.IntN(3)))
		}
	}
	minmax("minProperties", "maxProperties")
	if g.chance(0.25) {
		add("items", sub())
	}
	minmax("minItems", "maxItems")
	minmax("minLength", "maxLength")
	if g.chance(0.1) {
		b, _ := json.Marshal(g.pick(genPattern))
		add("pattern", string(b))
	}
	if g.chance(0.1) {
		add("format", fmt.Sprintf("%q", g.pick(genFormats)))
	}
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
		if g.chance(0.1) {
			add(k, g.pick(genNumbers))
		}
	}
	if g.chance(0.08) {
		add("multipleOf", []string{"1", "2", "3", "0.5", "0.01", "2.5e-1", "1e2"}[g.r.IntN(7)])
	}
	if g.chance(0.12) {
		seen := map[string]bool{}
		var vs []string
		for range 1 + g.r.IntN(4) {
			v := g.scalar()
			if g.chance(0.1) {
				v = g.payload(1)
			}
			var x any
			_ = json.Unmarshal([]byte(v), &x)
			canon, _ := json.Marshal(x)
			if !seen[string(canon)] {
				seen[string(canon)] = true
				vs = append(vs, v)
			}
		}
		add("enum", "["+strings.Join(vs, ",")+"]")
	}
	if g.chance(0.08) {
		add("const", g.scalar())
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if g.chance(0.1) {
			var ss []string
			for range 1 + g.r.IntN(3) {
				ss = append(ss, sub())
			}
			add(k, "["+strings.Join(ss, ",")+"]")
		}
	}
	if g.chance(0.1) {
		add("not", sub())
	}
	if defs > 0 && g.chance(0.15) {
		add("$ref", fmt.Sprintf(`"#/$defs/d%d"`, g.r.IntN(defs)))
	}
	g.r.Shuffle(len(kw), func(i, j int) { kw[i], kw[j] = kw[j], kw[i] })
	return "{" + strings.Join(kw, ",") + "}"
}

// root returns a random root schema with $defs that may recurse.
func (g *fastGen) root() string {
	defs := g.r.IntN(3)
	body := g.schema(3, defs)
	if defs == 0 || body == "true" || body == "false" {
		return body
	}
	var ds []string
	for i := range defs {
		// A definition refers to others only below a descending keyword,
		// so that there is no in-place cycle.
		d := g.schema(2, 0)
		if g.chance(0.5) {
			d = fmt.Sprintf(`{"type":["object","array","integer"],"properties":{"a":{"$ref":"#/$defs/d%d"}},"items":{"$ref":"#/$defs/d%d"},"maximum":5}`, g.r.IntN(defs), g.r.IntN(defs))
		}
		ds = append(ds, fmt.Sprintf(`"d%d":%s`, i, d))
	}
	if body == "{}" {
		return `{"$defs":{` + strings.Join(ds, ",") + `}}`
	}
	return `{"$defs":{` + strings.Join(ds, ",") + `},` + body[1:]
}

// payload returns a random JSON text, with duplicate and escaped member
// names, number spellings and escapes.
func (g *fastGen) payload(depth int) string {
	if depth <= 0 || g.chance(0.35) {
		s := g.scalar()
		if g.chance(0.05) {
			s = []string{`"\u00e9"`, `"a\"b"`, `"\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", `"\u0061\u0062"`}[g.r.IntN(6)]
		}
		return s
	}
	if g.chance(0.4) {
		var es []string
		for range g.r.IntN(4) {
			es = append(es, g.payload(depth-1))
		}
		return "[" + strings.Join(es, ",") + "]"
	}
	var ms []string
	for range g.r.IntN(4) {
		name, _ := json.Marshal(g.pick(genNames))
		if g.chance(0.1) {
			name = []byte(`"\u0061"`)
		}
		ms = append(ms, string(name)+":"+g.payload(depth-1))
	}
	return "{" + strings.Join(ms, ",") + "}"
}

// runFastGen registers one random schema and checks the fast path against
// gojsonschema on random payloads. It reports whether the schema got a
// fast path.
func runFastGen(t *testing.T, seed uint64, payloads int) bool {
	g := &fastGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	doc := g.root()
	reg := newRegistry(t, &Options{NoBuiltins: true, MaxPayloadBytes: 1 << 16})
	if err := reg.Register("gen.schema.v1", []byte(doc)); err != nil {
		return false // the generator can write schemas gojsonschema refuses (minLength > maxLength, ...)
	}
	s, _ := reg.Lookup("gen.schema.v1")
	if s.fast == nil {
		t.Fatalf("no fast path for generated schema %s", doc)
	}
	for range payloads {
		p := []byte(g.payload(3))
		t.Run("", func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("seed %d schema %s", seed, doc)
				}
			}()
			checkFast(t, reg, s, p)
		})
	}
	return true
}

func TestFastRandom(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	fast := 0
	for seed := range uint64(n) {
		if runFastGen(t, seed, 8) {
			fast++
		}
	}
	if fast < n/2 {
		t.Fatalf("only %d of %d generated schemas registered", fast, n)
	}
}

// FuzzFastRandom runs the generator from fuzzed seeds.
func FuzzFastRandom(f *testing.F) {
	for seed := range uint64(20) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		runFastGen(t, seed, 16)
	})
}
