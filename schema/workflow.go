package schema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/clutchprotocol/clutch/protocol"
)

// MaxWorkflowBytes is the largest workflow document [Registry.LoadWorkflow]
// reads.
const MaxWorkflowBytes = 1 << 20

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

func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
}
