package schema

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/xeipuuv/gojsonreference"
)

// The fast path. At registration, a schema whose every keyword is one
// listed below is also compiled into a tree of fastNodes; validation then
// first runs that tree over the payload bytes (fastscan.go). Its verdict is
// only ever used to return nil early: anything but fastValid sends the
// payload down the slow path (decodePayload + gojsonschema), which stays
// the reference and produces every error.
//
// Each keyword has gojsonschema v1.2.0's semantics (validation.go), for
// documents it compiles as draft 6, draft 7 or its "hybrid" default (every
// document that does not declare draft 4 in $schema); a draft 4 document
// has no fast path.

// verdict is the fast path's answer for one value.
type verdict uint8

const (
	fastValid   verdict = iota // the slow path would accept the value
	fastInvalid                // the slow path would refuse it
	fastBail                   // undecided: ask the slow path
)

func (v verdict) String() string {
	switch v {
	case fastValid:
		return "valid"
	case fastInvalid:
		return "invalid"
	}
	return "bail"
}

// typeSet is a set of JSON Schema types; 0 means untyped.
type typeSet uint8

const (
	tNull typeSet = 1 << iota
	tBoolean
	tObject
	tArray
	tNumber
	tInteger
	tString
)

var typeNames = map[string]typeSet{
	"null": tNull, "boolean": tBoolean, "object": tObject, "array": tArray,
	"number": tNumber, "integer": tInteger, "string": tString,
}

type nodeKind uint8

const (
	kindSchema nodeKind = iota
	kindTrue            // true, or a schema without assertions
	kindFalse           // false
	kindRef             // {"$ref": ...}: only the target counts
)

// maxFastNames bounds the member names one object schema may know
// (properties plus required), tracked in a fixed bitmask.
const maxFastNames = 128

// fastNode is one compiled schema.
type fastNode struct {
	kind  nodeKind
	ref   *fastNode // kindRef; set after its target is compiled (cycles)
	types typeSet

	// Objects. names holds properties (prop true) and required names that
	// are not properties; lookup maps a name to its index when there are
	// many.
	objChecks          bool
	names              []fastName
	lookup             map[string]int
	required           [2]uint64
	addlDeny           bool      // additionalProperties: false
	addl               *fastNode // additionalProperties schema, or nil
	minProps, maxProps int       // -1: absent

	// Arrays.
	arrChecks          bool
	items              *fastNode
	minItems, maxItems int

	// Strings.
	strChecks      bool
	minLen, maxLen int
	pattern        *regexp.Regexp
	format         string
	hasFormat      bool

	// Numbers.
	numChecks                      bool
	minimum, maximum, exMin, exMax *decimal
	multiple                       *decimal

	enum, cnst *fastEnum

	allOf, anyOf, oneOf []*fastNode
	not                 *fastNode
}

type fastName struct {
	name string
	node *fastNode
	prop bool
}

// fastEnum holds the values of enum (or the value of const) as gojsonschema
// compares them: each value is encoded by encoding/json, decoded without
// UseNumber and encoded again, and the strings compared. Scalars compare
// equal exactly when they are the same string, the same literal or the same
// float64 (so 1.0 == 1, and -0 != 0); composite values are not compared by
// the fast path.
type fastEnum struct {
	null, yes, no bool
	strs          []string
	nums          []uint64 // math.Float64bits
	composite     bool
}

// fastValidator is the compiled fast path of one schema.
type fastValidator struct{ root *fastNode }

// annotations are keywords gojsonschema does not validate with (or, for
// $id/id, that the registry removed or that gojsonschema ignores here).
var annotations = map[string]bool{
	"$schema": true, "$id": true, "id": true, "$comment": true, "title": true,
	"description": true, "default": true, "examples": true, "definitions": true,
	"$defs": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"contentMediaType": true, "contentEncoding": true,
}

// compileFast compiles a prepared and compiled schema document (after
// gojsonschema rewrote its $refs) into a fast validator, or returns nil when
// the document uses anything the fast path does not implement exactly.
func compileFast(doc any) (fv *fastValidator) {
	defer func() {
		if recover() != nil {
			fv = nil
		}
	}()
	hybrid := true
	if m, ok := doc.(map[string]any); ok {
		if v, ok := m["$schema"]; ok {
			// Detect the draft as gojsonschema does (parseSchemaURL).
			s, ok := v.(string)
			if !ok {
				return nil
			}
			ref, err := gojsonreference.NewJsonReference(s)
			if err != nil {
				return nil
			}
			switch ref.String() {
			case "http://json-schema.org/draft-04/schema":
				return nil // no boolean schemas, no const, boolean exclusiveMinimum only
			case "http://json-schema.org/draft-06/schema", "http://json-schema.org/draft-07/schema":
				hybrid = false
			}
		}
	}
	c := &fastCompiler{root: doc, hybrid: hybrid, refs: map[string]*fastNode{}}
	n := c.node(doc)
	if n == nil {
		return nil
	}
	// A chain of $refs must end in a schema (prepareSchema refuses loops;
	// the fast path does not rely on it).
	for _, r := range c.refs {
		steps := 0
		for ; r != nil && r.kind == kindRef && steps <= len(c.refs); steps++ {
			r = r.ref
		}
		if r == nil || steps > len(c.refs) {
			return nil
		}
	}
	return &fastValidator{root: n}
}

type fastCompiler struct {
	root   any
	hybrid bool
	refs   map[string]*fastNode // by $ref string, as gojsonschema's reference pool
}

func (c *fastCompiler) node(v any) *fastNode {
	switch x := v.(type) {
	case bool:
		if x {
			return &fastNode{kind: kindTrue}
		}
		return &fastNode{kind: kindFalse}
	case map[string]any:
		if r, ok := x["$ref"]; ok {
			return c.ref(r)
		}
		return c.object(x)
	}
	return nil
}

// ref compiles {"$ref": s}: gojsonschema validates such a node against the
// target only, whatever else it holds, and resolves the target with
// gojsonreference against the root document.
func (c *fastCompiler) ref(r any) *fastNode {
	// prepareSchema let only "#" and "#/pointer" through; gojsonschema
	// rewrote "#" to "".
	s, ok := r.(string)
	if !ok || (s != "" && !strings.HasPrefix(s, "#")) {
		return nil
	}
	if n, ok := c.refs[s]; ok {
		return n
	}
	ref, err := gojsonreference.NewJsonReference(s)
	if err != nil {
		return nil
	}
	target, _, err := ref.GetPointer().Get(c.root)
	if err != nil {
		return nil
	}
	n := &fastNode{kind: kindRef}
	c.refs[s] = n
	t := c.node(target)
	if t == nil {
		return nil
	}
	n.ref = t
	return n
}

func (c *fastCompiler) object(m map[string]any) *fastNode {
	n := &fastNode{minProps: -1, maxProps: -1, minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
	asserts := false
	var exMinBool, exMaxBool *bool
	var props map[string]any
	var required []any
	for k, v := range m {
		asserts = asserts || !annotations[k]
		var ok bool
		switch k {
		case "type":
			ok = c.types(n, v)
		case "properties":
			props, ok = v.(map[string]any)
		case "required":
			required, ok = v.([]any)
		case "additionalProperties":
			n.objChecks = true
			switch a := v.(type) {
			case bool:
				n.addlDeny, ok = !a, true
			case map[string]any:
				n.addl = c.node(a)
				ok = n.addl != nil
			}
		case "minProperties":
			n.minProps, ok = count(v)
			n.objChecks = true
		case "maxProperties":
			n.maxProps, ok = count(v)
			n.objChecks = true
		case "items":
			switch v.(type) {
			case bool, map[string]any:
				n.items = c.node(v)
				ok = n.items != nil
			} // an array of schemas (tuple form) is not implemented
			n.arrChecks = true
		case "minItems":
			n.minItems, ok = count(v)
			n.arrChecks = true
		case "maxItems":
			n.maxItems, ok = count(v)
			n.arrChecks = true
		case "uniqueItems":
			ok = v == false
		case "minLength":
			n.minLen, ok = count(v)
			n.strChecks = true
		case "maxLength":
			n.maxLen, ok = count(v)
			n.strChecks = true
		case "pattern":
			if s, isStr := v.(string); isStr {
				var err error
				n.pattern, err = regexp.Compile(s)
				ok = err == nil
			}
			n.strChecks = true
		case "format":
			n.format, ok = v.(string)
			n.hasFormat = ok && n.format != "" // gojsonschema skips ""

			n.strChecks, n.numChecks = true, true
		case "minimum":
			n.minimum, ok = bound(v)
			n.numChecks = true
		case "maximum":
			n.maximum, ok = bound(v)
			n.numChecks = true
		case "exclusiveMinimum":
			exMinBool, n.exMin, ok = c.exclusive(v)
			n.numChecks = true
		case "exclusiveMaximum":
			exMaxBool, n.exMax, ok = c.exclusive(v)
			n.numChecks = true
		case "multipleOf":
			n.multiple, ok = bound(v)
			ok = ok && n.multiple.sign() > 0
			n.numChecks = true
		case "enum":
			var vals []any
			if vals, ok = v.([]any); ok && len(vals) > 0 {
				n.enum, ok = enumOf(vals)
			}
		case "const":
			n.cnst, ok = enumOf([]any{v})
		case "allOf":
			n.allOf, ok = c.list(v)
		case "anyOf":
			n.anyOf, ok = c.list(v)
		case "oneOf":
			n.oneOf, ok = c.list(v)
		case "not":
			switch v.(type) {
			case bool, map[string]any:
				n.not = c.node(v)
				ok = n.not != nil
			}
		default:
			ok = annotations[k]
		}
		if !ok {
			return nil
		}
	}
	// Draft 4 style boolean exclusiveMinimum (gojsonschema's hybrid mode):
	// true turns minimum into an exclusive bound.
	if exMinBool != nil {
		if n.minimum == nil {
			return nil
		}
		if *exMinBool {
			n.exMin, n.minimum = n.minimum, nil
		}
	}
	if exMaxBool != nil {
		if n.maximum == nil {
			return nil
		}
		if *exMaxBool {
			n.exMax, n.maximum = n.maximum, nil
		}
	}
	if props != nil || required != nil {
		n.objChecks = true
		if !c.names(n, props, required) {
			return nil
		}
	}
	if !asserts {
		n.kind = kindTrue
	}
	return n
}

func (c *fastCompiler) types(n *fastNode, v any) bool {
	switch t := v.(type) {
	case string:
		n.types = typeNames[t]
		return n.types != 0
	case []any:
		for _, e := range t {
			s, _ := e.(string)
			b := typeNames[s]
			if b == 0 || n.types&b != 0 {
				return false
			}
			n.types |= b
		}
		return true
	}
	return false
}

func (c *fastCompiler) names(n *fastNode, props map[string]any, required []any) bool {
	for _, name := range sortedKeys(props) {
		sub := c.node(props[name])
		if sub == nil {
			return false
		}
		n.names = append(n.names, fastName{name: name, node: sub, prop: true})
	}
	index := func(name string) int {
		for i, nm := range n.names {
			if nm.name == name {
				return i
			}
		}
		return -1
	}
	for _, r := range required {
		name, ok := r.(string)
		if !ok {
			return false
		}
		i := index(name)
		if i < 0 {
			i = len(n.names)
			n.names = append(n.names, fastName{name: name})
		}
		if i >= maxFastNames {
			return false
		}
		n.required[i>>6] |= 1 << (i & 63)
	}
	if len(n.names) > maxFastNames {
		return false
	}
	if len(n.names) > 8 {
		n.lookup = make(map[string]int, len(n.names))
		for i, nm := range n.names {
			n.lookup[nm.name] = i
		}
	}
	return true
}

func (c *fastCompiler) list(v any) ([]*fastNode, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]*fastNode, 0, len(arr))
	for _, e := range arr {
		switch e.(type) {
		case bool, map[string]any:
		default:
			return nil, false
		}
		n := c.node(e)
		if n == nil {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

// exclusive reads exclusiveMinimum/exclusiveMaximum: a number in every
// draft gojsonschema runs here, or (hybrid mode only) a boolean.
func (c *fastCompiler) exclusive(v any) (*bool, *decimal, bool) {
	if b, ok := v.(bool); ok {
		return &b, nil, c.hybrid
	}
	d, ok := bound(v)
	return nil, d, ok
}

// count reads a non-negative integer keyword value as gojsonschema does
// (json.Number.Int64).
func count(v any) (int, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || i < 0 {
		return 0, false
	}
	return int(i), true
}

// bound reads a number keyword value.
func bound(v any) (*decimal, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	b := []byte(n)
	end, d, ok := parseNumber(b, 0)
	if !ok || end != len(b) {
		return nil, false
	}
	return &d, true
}

func enumOf(vals []any) (*fastEnum, bool) {
	e := &fastEnum{}
	for _, v := range vals {
		switch x := v.(type) {
		case nil:
			e.null = true
		case bool:
			if x {
				e.yes = true
			} else {
				e.no = true
			}
		case string:
			e.strs = append(e.strs, x)
		case json.Number:
			f, err := strconv.ParseFloat(string(x), 64)
			if err != nil {
				return nil, false
			}
			e.nums = append(e.nums, math.Float64bits(f))
		case map[string]any, []any:
			e.composite = true
		default:
			return nil, false
		}
	}
	return e, true
}
