package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/clutchprotocol/clutch/protocol"
)

// MaxWorkflowBytes is the largest workflow document [Registry.LoadWorkflow]
// reads.
const MaxWorkflowBytes = 1 << 20

// MetaStep is the meta key that names the workflow step a message answers
// ("meta": {"step": "research"}); see [Workflow.StepFor].
const MetaStep = "step"

// Workflow holds the validation rules of one workflow (docs/protocol.md §3.4): what
// each step is expected to produce. Its YAML (or JSON) form is exactly the
// seed's:
//
//	workflow: product-research
//	steps:
//	  - id: research
//	    expects:
//	      type: task.result
//	      payload_type: research.summary.v1
//	      required:
//	        - findings
//	        - citations
//
// A Workflow is a plain value; [Registry.LoadWorkflow] and
// [Registry.CheckWorkflow] check it against a registry, and a [Binder]
// applies it to the messages of a run. Do not modify a Workflow while
// another goroutine uses it ([Binder.Bind] keeps its own copy).
type Workflow struct {
	Name  string `json:"workflow" yaml:"workflow"`
	Steps []Step `json:"steps" yaml:"steps"`
}

// Step is one step of a [Workflow].
type Step struct {
	ID      string  `json:"id" yaml:"id"`
	Expects Expects `json:"expects" yaml:"expects"`
}

// Expects is what a step's message must be.
type Expects struct {
	// Type is the message type (docs/protocol.md §2), e.g. task.result. Required.
	Type protocol.Type `json:"type" yaml:"type"`
	// PayloadType is the payload_type the message must carry; its payload
	// is validated against that type's schema. Optional: "" accepts any
	// payload_type (and validates the payload against whichever it names).
	PayloadType string `json:"payload_type,omitempty" yaml:"payload_type,omitempty"`
	// Required lists payload members that must be present (not necessarily
	// non-null; the schema decides about types), on top of what the schema
	// requires. An entry is a top-level member name ("findings") or, when it
	// starts with "/", a JSON pointer into the payload ("/sources/0/url").
	Required []string `json:"required,omitempty" yaml:"required,omitempty"`
}

// Step returns the step with the given id.
func (w *Workflow) Step(id string) (Step, bool) {
	for _, s := range w.Steps {
		if s.ID == id {
			return s, true
		}
	}
	return Step{}, false
}

// clone returns a deep copy.
func (w *Workflow) clone() *Workflow {
	c := &Workflow{Name: w.Name, Steps: make([]Step, len(w.Steps))}
	for i, s := range w.Steps {
		s.Expects.Required = slices.Clone(s.Expects.Required)
		c.Steps[i] = s
	}
	return c
}

func (w *Workflow) equal(o *Workflow) bool {
	if w.Name != o.Name || len(w.Steps) != len(o.Steps) {
		return false
	}
	for i, s := range w.Steps {
		t := o.Steps[i]
		if s.ID != t.ID || s.Expects.Type != t.Expects.Type || s.Expects.PayloadType != t.Expects.PayloadType ||
			!slices.Equal(s.Expects.Required, t.Expects.Required) {
			return false
		}
	}
	return true
}

// LoadWorkflow reads a workflow from YAML or JSON (JSON is recognised by its
// leading '{"') in exactly the shape of docs/protocol.md §3.4 and checks it against
// the registry (see [Registry.CheckWorkflow]). Unknown fields, duplicate
// keys, values of the wrong kind, a second YAML document, and every failed
// check are reported together in a [*WorkflowError] whose problems carry the
// line, column and field ("steps[1].expects.payload_type").
func (r *Registry) LoadWorkflow(data []byte) (w *Workflow, err error) {
	if len(data) > MaxWorkflowBytes {
		return nil, errorf(ErrTooLarge, "workflow is %d bytes, limit %d", len(data), MaxWorkflowBytes)
	}
	defer func() {
		if p := recover(); p != nil { // the YAML parser, on input nobody foresaw
			w, err = nil, &WorkflowError{Problems: []Problem{{Detail: fmt.Sprintf("cannot parse: %v", p)}}}
		}
	}()
	p := &wfParser{pos: map[string][2]int{}}
	w = p.parse(data)
	if w == nil {
		return nil, &WorkflowError{Problems: p.problems}
	}
	for _, pr := range r.check(w, p.pos) {
		if !p.reported(pr.Field) {
			p.problems = append(p.problems, pr)
		}
	}
	if len(p.problems) > 0 {
		sortProblems(p.problems)
		return nil, &WorkflowError{Workflow: w.Name, Problems: p.problems}
	}
	return w, nil
}

// CheckWorkflow checks a workflow built in Go against the registry, like
// [Registry.LoadWorkflow] does after parsing: a non-empty name; at least one
// step; step ids non-empty and unique; expects.type a valid message type;
// expects.payload_type well formed and registered (even in a permissive
// registry: a workflow naming a contract nobody registered is a mistake);
// required entries non-empty, unique, well-formed pointers, and members the
// schema can hold when it refuses unknown members. It returns a
// [*WorkflowError] listing every problem, or nil.
func (r *Registry) CheckWorkflow(w *Workflow) error {
	if w == nil {
		return &WorkflowError{Problems: []Problem{{Detail: "nil workflow"}}}
	}
	if ps := r.check(w, nil); len(ps) > 0 {
		return &WorkflowError{Workflow: w.Name, Problems: ps}
	}
	return nil
}

// check returns the semantic problems of w; pos maps field paths to their
// line and column when w was parsed.
func (r *Registry) check(w *Workflow, pos map[string][2]int) []Problem {
	var ps []Problem
	add := func(field, format string, args ...any) {
		p := Problem{Field: field, Detail: fmt.Sprintf(format, args...)}
		for f := field; ; {
			if lc, ok := pos[f]; ok {
				p.Line, p.Column = lc[0], lc[1]
				break
			}
			if f == "" {
				break
			}
			f = f[:max(strings.LastIndexAny(f, ".["), 0)]
		}
		ps = append(ps, p)
	}
	if w.Name == "" {
		add("workflow", "a workflow needs a name")
	} else if len(w.Name) > protocol.MaxIDLength {
		add("workflow", "name is %d bytes, limit %d", len(w.Name), protocol.MaxIDLength)
	}
	if len(w.Steps) == 0 {
		add("steps", "a workflow needs at least one step")
	}
	seen := map[string]string{}
	for i, s := range w.Steps {
		f := "steps[" + strconv.Itoa(i) + "]"
		switch first, dup := seen[s.ID]; {
		case s.ID == "":
			add(f+".id", "a step needs an id")
		case dup:
			add(f+".id", "duplicate step id %q (first used by %s)", s.ID, first)
		default:
			seen[s.ID] = f
		}
		e := s.Expects
		switch {
		case e.Type == "":
			add(f+".expects.type", "expects.type is required (e.g. task.result)")
		case !e.Type.Valid():
			add(f+".expects.type", "unknown message type %q: neither a docs/protocol.md §2 type nor x.<vendor>.<name>", e.Type)
		}
		var sch *Schema
		if e.PayloadType != "" {
			if !protocol.ValidPayloadType(e.PayloadType) {
				add(f+".expects.payload_type", "payload type %q is not of the form <domain>.<name>.v<N>", e.PayloadType)
			} else if s, ok := r.Lookup(e.PayloadType); ok {
				sch = s
			} else {
				add(f+".expects.payload_type", "unknown payload type %q: no schema is registered for it", e.PayloadType)
			}
		}
		seenReq := map[string]bool{}
		for j, name := range e.Required {
			rf := f + ".expects.required[" + strconv.Itoa(j) + "]"
			switch {
			case name == "":
				add(rf, "a required member needs a name")
				continue
			case seenReq[name]:
				add(rf, "%q is listed twice", name)
				continue
			}
			seenReq[name] = true
			top := name
			if name[0] == '/' {
				if !validPointer(name) {
					add(rf, "%q is not a valid JSON pointer (\"~\" must be followed by 0 or 1)", name)
					continue
				}
				top, _, _ = strings.Cut(name[1:], "/")
				top = strings.ReplaceAll(strings.ReplaceAll(top, "~1", "/"), "~0", "~")
			}
			if sch != nil && sch.rootClosed && !sch.rootProps[top] {
				add(rf, "the schema of %s has no member %q, so no payload could ever satisfy this step", e.PayloadType, top)
			}
		}
	}
	return ps
}

func validPointer(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return false
		}
	}
	return true
}

func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
}

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

// StepFor returns the step of w that a message of a bound run answers. This
// is the binding rule the router relies on (see [Binder]):
//
//  1. If the message names a step in meta ("meta": {"step": "research"},
//     see [MetaStep]), that step; an id w does not have is an error wrapping
//     [ErrUnknownStep].
//  2. Otherwise the steps whose expects.type is the message's type are the
//     candidates. None: the workflow says nothing about this kind of message
//     and ok is false (the router still validates the payload against the
//     registry). Else the first candidate whose expects.payload_type is the
//     message's payload_type, or is empty.
//  3. Candidates exist but none accepts the payload_type: a
//     [*ValidationError] naming the payload types the workflow expects for
//     this message type. (Within a workflow the steps of a message type are
//     exhaustive: a task.result of a run bound to a workflow with task.result
//     steps must be one of them.)
//
// When several steps share a type and payload_type, rule 2 picks the first;
// name the step in meta to pick another.
func (w *Workflow) StepFor(m *protocol.Message) (step Step, ok bool, err error) {
	if m == nil {
		return Step{}, false, errorf(ErrInvalidOptions, "nil message")
	}
	if v, has := m.Meta[MetaStep]; has {
		id, isStr := v.(string)
		if !isStr {
			return Step{}, false, errorf(ErrUnknownStep, "meta.%s must be a string, got %T", MetaStep, v)
		}
		s, found := w.Step(id)
		if !found {
			return Step{}, false, errorf(ErrUnknownStep, "workflow %q has no step %q", w.Name, id)
		}
		return s, true, nil
	}
	var expected []string
	for _, s := range w.Steps {
		if s.Expects.Type != m.Type {
			continue
		}
		if s.Expects.PayloadType == "" || s.Expects.PayloadType == m.PayloadType {
			return s, true, nil
		}
		expected = append(expected, s.Expects.PayloadType+" (step "+s.ID+")")
	}
	if expected == nil {
		return Step{}, false, nil
	}
	got := m.PayloadType
	if got == "" {
		got = "none"
	}
	return Step{}, false, &ValidationError{
		PayloadType: m.PayloadType,
		Workflow:    w.Name,
		Violations: []Violation{{
			Path:    "/payload_type",
			Keyword: "expects.payload_type",
			Message: fmt.Sprintf("%s messages of this workflow carry %s; got %s", m.Type, strings.Join(expected, " or "), got),
		}},
	}
}

// requiredPointer turns an expects.required entry into a JSON pointer: a
// member name, or a pointer when it starts with "/".
func requiredPointer(name string) string {
	if name == "" || name[0] != '/' {
		return "/" + escapePointer(name)
	}
	return name
}

// ValidateStep validates a message against one step of the workflow (docs/protocol.md
// §3.4): its type must be expects.type, its payload_type
// expects.payload_type (when set), every expects.required member must be
// present, and the payload must satisfy the schema of its payload_type in
// reg. Failures of any of these are collected in one [*ValidationError]
// whose paths are relative to the message ("/type", "/payload/findings").
// Envelope problems that make the payload unreadable or its contract
// unknown (bad JSON, over the size limit, a schema_ref mismatch, an unknown
// payload_type in a non-permissive registry) are returned as they are, as
// by [Registry.ValidateMessage]. An unknown stepID wraps [ErrUnknownStep].
func (w *Workflow) ValidateStep(stepID string, m *protocol.Message, reg *Registry) error {
	s, ok := w.Step(stepID)
	if !ok {
		return errorf(ErrUnknownStep, "workflow %q has no step %q", w.Name, stepID)
	}
	if m == nil || reg == nil {
		return errorf(ErrInvalidOptions, "ValidateStep needs a message and a registry")
	}
	e := s.Expects
	var vs []Violation
	if m.Type != e.Type {
		vs = append(vs, Violation{Path: "/type", Keyword: "expects.type",
			Message: fmt.Sprintf("step %q expects a %s message, got %s", s.ID, e.Type, m.Type)})
	}
	ptMatch := e.PayloadType == "" || m.PayloadType == e.PayloadType
	if !ptMatch {
		got := m.PayloadType
		if got == "" {
			got = "none"
		}
		vs = append(vs, Violation{Path: "/payload_type", Keyword: "expects.payload_type",
			Message: fmt.Sprintf("step %q expects payload_type %s, got %s", s.ID, e.PayloadType, got)})
	}
	if !ptMatch {
		// The payload is of another contract: its members say nothing
		// about this step's.
		return &ValidationError{PayloadType: m.PayloadType, Workflow: w.Name, Step: s.ID, Violations: vs}
	}
	sch, err := reg.schemaFor(m)
	if err != nil {
		return err
	}
	maxBytes := reg.maxBytes
	if sch != nil {
		maxBytes = sch.maxBytes
	}
	// When the fast path accepts the payload, the schema holds and
	// expects.required is read from the bytes; no decoding.
	fast := sch != nil && sch.fastValid(m.Payload)
	var buf [8]bool
	present := buf[:0]
	for _, name := range e.Required {
		if !fast {
			break
		}
		p, ok := requiredPresent(m.Payload, name)
		present, fast = append(present, p), ok
	}
	var doc any
	if !fast && (sch != nil || len(e.Required) > 0) {
		if doc, err = decodePayload(m.Payload, maxBytes); err != nil {
			return err
		}
	}
	for i, name := range e.Required {
		var found bool
		if fast {
			found = present[i]
		} else {
			_, found = resolvePointer(doc, requiredPointer(name))
		}
		if !found {
			vs = append(vs, Violation{Path: "/payload" + requiredPointer(name), Keyword: "expects.required",
				Message: fmt.Sprintf("step %q requires %s", s.ID, strings.TrimPrefix(name, "/"))})
		}
	}
	if sch != nil && !fast {
		err := sch.validateDoc(doc, "/payload")
		var ve *ValidationError
		switch {
		case errors.As(err, &ve):
			vs = append(vs, ve.Violations...)
		case err != nil:
			return err
		}
	}
	if len(vs) == 0 {
		return nil
	}
	sortViolations(vs)
	return &ValidationError{PayloadType: m.PayloadType, Workflow: w.Name, Step: s.ID, Violations: vs}
}
