package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/clutchprotocol/clutch/protocol"
)

// wfParser turns a YAML node tree into a Workflow by hand, so that every
// problem can name its line, column and field.
type wfParser struct {
	problems []Problem
	pos      map[string][2]int // field path → line, column
	bad      map[string]bool   // fields with a problem already
}

// reported reports whether field or one of its parents already has a
// problem, so the checks do not repeat it in other words.
func (p *wfParser) reported(field string) bool {
	for f := field; f != ""; {
		if p.bad[f] {
			return true
		}
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return false
}

func (p *wfParser) addAt(n *yaml.Node, field, format string, args ...any) {
	if p.bad == nil {
		p.bad = map[string]bool{}
	}
	p.bad[field] = true
	pr := Problem{Field: field, Detail: fmt.Sprintf(format, args...)}
	if n != nil {
		pr.Line, pr.Column = n.Line, n.Column
	}
	p.problems = append(p.problems, pr)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// parse returns nil when the document cannot be read at all.
func (p *wfParser) parse(data []byte) *Workflow {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	if isJSON(data) {
		if !json.Valid(data) {
			var v any
			err := json.Unmarshal(data, &v)
			pr := Problem{Detail: "invalid JSON: " + err.Error()}
			var se *json.SyntaxError
			if errors.As(err, &se) {
				pr.Line, pr.Column = lineCol(data, se.Offset)
			}
			p.problems = append(p.problems, pr)
			return nil
		}
		// Raw tabs in valid JSON are whitespace between tokens, which YAML
		// does not always accept; spaces mean the same to both.
		data = bytes.ReplaceAll(data, []byte{'\t'}, []byte{' '})
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			p.problems = append(p.problems, Problem{Detail: "empty document"})
			return nil
		}
		pr := Problem{Detail: "invalid YAML: " + err.Error()}
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			pr.Line, _ = strconv.Atoi(m[1])
			pr.Detail = "invalid YAML: " + strings.TrimPrefix(err.Error(), m[0])
		}
		p.problems = append(p.problems, pr)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		line := 0
		if err == nil {
			line = extra.Line
		}
		p.problems = append(p.problems, Problem{Line: line, Detail: "a workflow file holds one YAML document"})
		return nil
	}
	root := deref(&doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = deref(root.Content[0])
	}
	w := &Workflow{}
	if !p.expectKind(root, "", yaml.MappingNode) {
		return nil
	}
	p.pos[""] = [2]int{root.Line, root.Column}
	p.mapping(root, "", func(key string, k, v *yaml.Node) {
		switch key {
		case "workflow":
			w.Name = p.str(v, "workflow")
		case "steps":
			p.pos["steps"] = [2]int{v.Line, v.Column}
			if !p.expectKind(v, "steps", yaml.SequenceNode) {
				return
			}
			for i, sn := range v.Content {
				w.Steps = append(w.Steps, p.step(deref(sn), "steps["+strconv.Itoa(i)+"]"))
			}
		default:
			p.addAt(k, key, "unknown field %q (a workflow has workflow and steps)", key)
		}
	})
	return w
}

func (p *wfParser) step(n *yaml.Node, field string) Step {
	var s Step
	p.pos[field] = [2]int{n.Line, n.Column}
	if !p.expectKind(n, field, yaml.MappingNode) {
		return s
	}
	p.mapping(n, field, func(key string, k, v *yaml.Node) {
		f := field + "." + key
		switch key {
		case "id":
			s.ID = p.str(v, f)
		case "expects":
			p.pos[f] = [2]int{v.Line, v.Column}
			if !p.expectKind(v, f, yaml.MappingNode) {
				return
			}
			p.mapping(v, f, func(key string, k, v *yaml.Node) {
				ef := f + "." + key
				switch key {
				case "type":
					s.Expects.Type = protocol.Type(p.str(v, ef))
				case "payload_type":
					s.Expects.PayloadType = p.str(v, ef)
				case "required":
					p.pos[ef] = [2]int{v.Line, v.Column}
					if !p.expectKind(v, ef, yaml.SequenceNode) {
						return
					}
					s.Expects.Required = []string{}
					for i, rn := range v.Content {
						s.Expects.Required = append(s.Expects.Required, p.str(deref(rn), ef+"["+strconv.Itoa(i)+"]"))
					}
				default:
					p.addAt(k, ef, "unknown field %q (expects has type, payload_type and required)", key)
				}
			})
		default:
			p.addAt(k, f, "unknown field %q (a step has id and expects)", key)
		}
	}, "expects")
	return s
}

// mapping calls fn for each key of a mapping node, reporting duplicate and
// non-string keys, then the missing keys of want.
func (p *wfParser) mapping(n *yaml.Node, field string, fn func(key string, k, v *yaml.Node), want ...string) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		kf := joinField(field, k.Value)
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			p.addAt(k, field, "keys must be strings")
			continue
		}
		if line, dup := seen[k.Value]; dup {
			p.addAt(k, kf, "duplicate key %q (first at line %d)", k.Value, line)
			continue
		}
		seen[k.Value] = k.Line
		fn(k.Value, k, v)
	}
	for _, key := range want {
		if _, ok := seen[key]; !ok {
			p.addAt(n, joinField(field, key), "missing field %q", key)
		}
	}
}

func joinField(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// str reads a string scalar; null reads as "" (reported as missing by the
// checks), anything else is a problem.
func (p *wfParser) str(n *yaml.Node, field string) string {
	p.pos[field] = [2]int{n.Line, n.Column}
	if n.Kind == yaml.ScalarNode {
		switch n.Tag {
		case "!!str":
			return n.Value
		case "!!null":
			return ""
		}
		p.addAt(n, field, "must be a string, got %s %q (quote it)", strings.TrimPrefix(n.Tag, "!!"), n.Value)
		return ""
	}
	p.addAt(n, field, "must be a string, got %s", kindName(n.Kind))
	return ""
}

func (p *wfParser) expectKind(n *yaml.Node, field string, k yaml.Kind) bool {
	if n.Kind == k {
		return true
	}
	want := "a list"
	if k == yaml.MappingNode {
		want = "a mapping"
	}
	got := kindName(n.Kind)
	if n.Kind == yaml.ScalarNode {
		got = strings.TrimPrefix(n.Tag, "!!") + " " + strconv.Quote(n.Value)
	}
	if field == "" {
		p.addAt(n, field, "a workflow must be %s, got %s", want, got)
	} else {
		p.addAt(n, field, "must be %s, got %s", want, got)
	}
	return false
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a scalar"
	case yaml.DocumentNode:
		return "a document"
	}
	return "an alias"
}

// deref follows YAML aliases (bounded, in case of a malformed tree).
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; i < 16 && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

// isJSON reports whether data looks like a JSON object: '{' then '"' or
// '}'. YAML flow mappings ({workflow: w, ...}) have unquoted keys.
func isJSON(data []byte) bool {
	d := bytes.TrimLeft(data, " \t\r\n")
	if len(d) == 0 || d[0] != '{' {
		return false
	}
	d = bytes.TrimLeft(d[1:], " \t\r\n")
	return len(d) == 0 || d[0] == '"' || d[0] == '}'
}

// lineCol converts a byte offset (1-based, as json.SyntaxError reports the
// number of bytes read) into a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:max(off-1, 0)]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}
