package adaptertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// garbage is malformed or hostile input: Run feeds each to Inbound.
var garbage = []string{
	"", " ", "null", "true", "0", "-1", "1e999", `"x"`, `""`, "[]", "{}", "[{}]", "{", "}", "[", `{"`, `{"a"`, `{"a":`,
	`{"a":1`, `{"a":1,}`, `{,}`, `{"a" 1}`, `{'a':1}`, "\xef\xbb\xbf{}", "\x00", "{\"\x00\":1}", `{"\ud800":1}`,
	`{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{"a":1,"a":2}`, `{"__proto__":{}}`, `{"":""}`, "{}{}", "{} x",
	`{"a":01}`, `{"a":.5}`, `{"a":1.}`, `{"a":-}`, `{"a":NaN}`, `{"a":Infinity}`, `{"a":tru}`, `{"a":nul}`,
	`{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"\n\"}", `{"a":[1,2,]}`, `{"a":{"b":{"c":[{"d":null}]}}}`,
}

// duplicateKey repeats the first member of the top-level object.
func duplicateKey(raw []byte) []byte {
	i := bytes.IndexByte(raw, '{')
	j := bytes.IndexByte(raw, ',')
	if i < 0 || j < i {
		return raw
	}
	member := raw[i+1 : j]
	out := bytes.Clone(raw[:j+1])
	out = append(out, member...)
	out = append(out, ',')
	return append(out, raw[j+1:]...)
}

// invalidUTF8 puts a 0xff byte into the first string.
func invalidUTF8(raw []byte) []byte {
	out := bytes.Clone(raw)
	if i := bytes.IndexByte(out, '"'); i >= 0 && i+1 < len(out) {
		out = append(out[:i+1], append([]byte{0xff}, out[i+1:]...)...)
	}
	return out
}

// loneSurrogate puts a lone \ud800 escape into the last string.
func loneSurrogate(raw []byte) []byte {
	i := bytes.LastIndexByte(raw, '"')
	if i < 0 {
		return raw
	}
	out := bytes.Clone(raw[:i])
	out = append(out, `\ud800`...)
	return append(out, raw[i:]...)
}

// Mutations returns variants of a JSON document, by label: every member
// and array element replaced by a value of each other JSON type (null,
// numbers, strings, booleans, arrays, objects), removed, and given an
// extra unknown member. It returns nil for input that is not JSON. The
// variants are encoded with sorted keys.
func Mutations(raw []byte) map[string][]byte {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var root any
	if d.Decode(&root) != nil {
		return nil
	}
	replacements := []any{nil, json.Number("0"), json.Number("-1"), json.Number("1.5"), json.Number("1e300"),
		"", "x", strings.Repeat("é", 3000), true, false, []any{}, []any{"a", json.Number("1")}, map[string]any{}, map[string]any{"k": "v"}}
	out := map[string][]byte{}
	var walk func(path []any)
	walk = func(path []any) {
		v := get(root, path)
		label := pointer(path)
		if len(path) > 0 {
			for i, r := range replacements {
				if b, err := json.Marshal(set(root, path, r)); err == nil {
					out[label+" = #"+strconv.Itoa(i)] = b
				}
			}
			if b, err := json.Marshal(set(root, path, deleted{})); err == nil {
				out[label+" removed"] = b
			}
		}
		switch x := v.(type) {
		case map[string]any:
			if b, err := json.Marshal(set(root, append(slices.Clone(path), "zz_unknown"), "x")); err == nil {
				out[label+" + unknown member"] = b
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(append(slices.Clone(path), k))
			}
		case []any:
			for i := range x {
				walk(append(slices.Clone(path), i))
			}
		}
	}
	walk(nil)
	return out
}

type deleted struct{}

func get(v any, path []any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// set returns a copy of v with the value at path replaced (or removed, for
// deleted{}); the copy shares the untouched parts.
func set(v any, path []any, nv any) any {
	if len(path) == 0 {
		return nv
	}
	switch k := path[0].(type) {
	case string:
		m, _ := v.(map[string]any)
		c := make(map[string]any, len(m)+1)
		for kk, vv := range m {
			c[kk] = vv
		}
		r := set(m[k], path[1:], nv)
		if _, del := r.(deleted); del {
			delete(c, k)
		} else {
			c[k] = r
		}
		return c
	case int:
		l, _ := v.([]any)
		c := slices.Clone(l)
		if k >= len(c) {
			return c
		}
		r := set(c[k], path[1:], nv)
		if _, del := r.(deleted); del {
			return slices.Delete(c, k, k+1)
		}
		c[k] = r
		return c
	}
	return v
}

func pointer(path []any) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteByte('/')
		fmt.Fprint(&b, p)
	}
	if b.Len() == 0 {
		return "(root)"
	}
	return b.String()
}
