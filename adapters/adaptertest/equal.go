package adaptertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// EqualOptions relaxes JSONEqual.
type EqualOptions struct {
	// NullIsAbsent treats an object member whose value is null as absent,
	// for formats that do not tell the two apart (CLowl's pid, ctx).
	NullIsAbsent bool
	// Ignore lists JSON pointers (RFC 6901) removed from both documents
	// before they are compared.
	Ignore []string
}

// JSONEqual reports whether want and got hold the same JSON value: object
// members in any order, insignificant whitespace and number spelling
// (1.0 and 1) aside. The error names the first difference by its JSON
// pointer. opts may be nil.
func JSONEqual(want, got []byte, opts *EqualOptions) error {
	var o EqualOptions
	if opts != nil {
		o = *opts
	}
	w, err := decode(want)
	if err != nil {
		return fmt.Errorf("want is not JSON: %v", err)
	}
	g, err := decode(got)
	if err != nil {
		return fmt.Errorf("got is not JSON: %v", err)
	}
	for _, p := range o.Ignore {
		w, g = remove(w, p), remove(g, p)
	}
	return diff("", w, g, o.NullIsAbsent)
}

func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func remove(v any, ptr string) any {
	if ptr == "" || ptr[0] != '/' {
		return v
	}
	parts := strings.Split(ptr[1:], "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	var rec func(v any, parts []string) any
	rec = func(v any, parts []string) any {
		switch x := v.(type) {
		case map[string]any:
			if len(parts) == 1 {
				delete(x, parts[0])
				return x
			}
			if c, ok := x[parts[0]]; ok {
				x[parts[0]] = rec(c, parts[1:])
			}
		case []any:
			i, err := strconv.Atoi(parts[0])
			if err != nil || i < 0 || i >= len(x) {
				return x
			}
			if len(parts) == 1 {
				return append(x[:i:i], x[i+1:]...)
			}
			x[i] = rec(x[i], parts[1:])
		}
		return v
	}
	return rec(v, parts)
}

func diff(path string, w, g any, nullIsAbsent bool) error {
	at := path
	if at == "" {
		at = "(root)"
	}
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %s", at, show(g))
		}
		keys := map[string]bool{}
		for k := range wv {
			keys[k] = true
		}
		for k := range gv {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			p := path + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			a, inW := wv[k]
			b, inG := gv[k]
			if nullIsAbsent {
				inW = inW && a != nil
				inG = inG && b != nil
			}
			switch {
			case inW && !inG:
				return fmt.Errorf("%s: missing (want %s)", p, show(a))
			case !inW && inG:
				return fmt.Errorf("%s: unexpected %s", p, show(b))
			case inW && inG:
				if err := diff(p, a, b, nullIsAbsent); err != nil {
					return err
				}
			}
		}
		return nil
	case []any:
		gv, ok := g.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array, got %s", at, show(g))
		}
		if len(wv) != len(gv) {
			return fmt.Errorf("%s: want %d elements, got %d", at, len(wv), len(gv))
		}
		for i := range wv {
			if err := diff(path+"/"+strconv.Itoa(i), wv[i], gv[i], nullIsAbsent); err != nil {
				return err
			}
		}
		return nil
	case json.Number:
		gv, ok := g.(json.Number)
		if !ok {
			return fmt.Errorf("%s: want %s, got %s", at, wv, show(g))
		}
		if wv == gv {
			return nil
		}
		a, err1 := wv.Float64()
		b, err2 := gv.Float64()
		if err1 != nil || err2 != nil || a != b {
			return fmt.Errorf("%s: want %s, got %s", at, wv, gv)
		}
		return nil
	default:
		if w != g {
			return fmt.Errorf("%s: want %s, got %s", at, show(w), show(g))
		}
		return nil
	}
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 120 {
		return string(b[:120]) + "…"
	}
	return string(b)
}
