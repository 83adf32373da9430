package schema

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// oldMarshal is how the built-in types encoded before jsonappend.go:
// encoding/json on a copy without the MarshalJSON method, nil slices and
// maps replaced by empty ones. The appenders must write the same bytes.
func oldMarshal(v any) ([]byte, error) {
	nonNil := func(s any) any {
		rv := reflect.ValueOf(s)
		if rv.IsNil() {
			return reflect.MakeSlice(rv.Type(), 0, 0).Interface()
		}
		return s
	}
	switch p := v.(type) {
	case ResearchQuery:
		type plain ResearchQuery
		return json.Marshal(plain(p))
	case ResearchSummary:
		type plain ResearchSummary
		q := plain(p)
		q.Findings, q.Citations = nonNil(q.Findings).([]string), nonNil(q.Citations).([]string)
		return json.Marshal(q)
	case ResearchSources:
		type plain ResearchSources
		q := plain(p)
		q.Sources = nonNil(q.Sources).([]Source)
		if q.RelevanceScores == nil {
			q.RelevanceScores = map[string]float64{}
		}
		return json.Marshal(q)
	case CodeOutput:
		type plain CodeOutput
		q := plain(p)
		q.Files = nonNil(q.Files).([]File)
		return json.Marshal(q)
	case CodeReview:
		type plain CodeReview
		q := plain(p)
		q.Findings = nonNil(q.Findings).([]ReviewFinding)
		return json.Marshal(q)
	case ReviewFeedback:
		type plain ReviewFeedback
		q := plain(p)
		q.BlockingIssues = nonNil(q.BlockingIssues).([]string)
		return json.Marshal(q)
	}
	panic("not a built-in type")
}

// builtinValues builds one value of each built-in type with a Marshaler
// from the given strings and numbers.
func builtinValues(s1, s2, s3 string, n int, f float64, flag bool) []any {
	sev := Severity(s3)
	if flag {
		sev = SeverityMedium
	}
	return []any{
		ResearchQuery{Query: s1, Context: s2, MaxSources: n},
		ResearchQuery{Query: s3},
		ResearchSummary{Title: s1, Findings: []string{s2, s3}, Citations: []string{s1}},
		ResearchSummary{Findings: nil, Citations: []string{}},
		ResearchSources{Sources: []Source{{URL: s1, Title: s2, Excerpt: s3}, {URL: s2}}, RelevanceScores: map[string]float64{s1: f, s2: 0.5, s3: -f, "n": float64(n)}},
		ResearchSources{},
		CodeOutput{Files: []File{{Path: s1, Content: s2, Ref: s3}, {Path: s3}}, Language: s2, TestsPassed: flag},
		CodeOutput{Language: s1},
		CodeReview{Findings: []ReviewFinding{{Message: s1, Path: s2, Line: n, Severity: sev}, {Message: s3}}, Severity: sev, PatchRef: s2},
		CodeReview{Severity: SeverityLow},
		ReviewFeedback{Decision: Decision(s1), Comments: s2, BlockingIssues: []string{s3, s1}},
		ReviewFeedback{Decision: DecisionApprove},
	}
}

// checkMarshal: MarshalJSON writes what encoding/json wrote, the output is
// valid JSON that decodes back to the value (invalid UTF-8 as U+FFFD, nil
// as empty), and, when the value's strings and enums are valid for its
// schema, the payload validates through the fast path.
func checkMarshal(t *testing.T, reg *Registry, v any) {
	t.Helper()
	got, err := v.(json.Marshaler).MarshalJSON()
	want, werr := oldMarshal(v)
	if (err == nil) != (werr == nil) {
		t.Fatalf("%#v: error %v, encoding/json %v", v, err, werr)
	}
	if err != nil {
		if err.Error() != werr.Error() {
			t.Fatalf("%#v: error %q, encoding/json %q", v, err, werr)
		}
		// Through json.Marshal both are wrapped the same way.
		_, e1 := json.Marshal(v)
		if e1 == nil {
			t.Fatalf("json.Marshal(%#v) succeeded", v)
		}
		return
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%#v:\n got %s\nwant %s", v, got, want)
	}
	if !json.Valid(got) {
		t.Fatalf("invalid JSON %s", got)
	}
	if via, err := json.Marshal(v); err != nil || !bytes.Equal(via, got) {
		t.Fatalf("json.Marshal: %s, %v; MarshalJSON %s", via, err, got)
	}
	back := reflect.New(reflect.TypeOf(v))
	if err := json.Unmarshal(got, back.Interface()); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if diff := cmp.Diff(sanitized(v), back.Elem().Interface(), cmpopts.EquateEmpty(), cmpopts.EquateNaNs()); diff != "" {
		t.Fatalf("%s round trip (-want +got):\n%s", got, diff)
	}
	pt := ""
	switch v.(type) {
	case ResearchQuery:
		pt = PayloadResearchQuery
	case ResearchSummary:
		pt = PayloadResearchSummary
	case ResearchSources:
		pt = PayloadResearchSources
	case CodeOutput:
		pt = PayloadCodeOutput
	case CodeReview:
		pt = PayloadCodeReview
	case ReviewFeedback:
		pt = PayloadReviewFeedback
	}
	s, _ := reg.Lookup(pt)
	verr := reg.Validate(pt, got)
	if err := sameError(verr, slowValidate(s, got, "")); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if schemaValid(v) {
		if verr != nil {
			t.Fatalf("%s: %v", got, verr)
		}
		if fv := s.fast.check(got, s.maxBytes); fv != fastValid {
			t.Fatalf("%s: fast path says %v", got, fv)
		}
	}
}

// schemaValid reports whether v's strings satisfy its schema's minLength
// and enum constraints (the Go types do not enforce them), and whether its
// encoding is free of duplicate members (map keys that differ only in
// invalid UTF-8 both become U+FFFD), on which the fast path bails.
func schemaValid(v any) bool {
	sev := func(s Severity) bool {
		switch s {
		case SeverityInfo, SeverityLow, SeverityMedium, SeverityHigh, SeverityCritical:
			return true
		}
		return false
	}
	switch p := v.(type) {
	case ResearchQuery:
		return p.Query != "" && p.MaxSources >= 0
	case ResearchSources:
		for _, s := range p.Sources {
			if s.URL == "" {
				return false
			}
		}
		keys := map[string]bool{}
		for k := range p.RelevanceScores {
			keys[string([]rune(k))] = true
		}
		return len(keys) == len(p.RelevanceScores)
	case CodeOutput:
		for _, f := range p.Files {
			if f.Path == "" {
				return false
			}
		}
	case CodeReview:
		for _, f := range p.Findings {
			if f.Message == "" || f.Line < 0 || (f.Severity != "" && !sev(f.Severity)) {
				return false
			}
		}
		return sev(p.Severity)
	case ReviewFeedback:
		switch p.Decision {
		case DecisionApprove, DecisionRequestChanges, DecisionReject:
		default:
			return false
		}
	}
	return true
}

// sanitized returns v with every string as encoding/json decodes it back:
// each byte of invalid UTF-8 becomes U+FFFD.
func sanitized(v any) any {
	rv := reflect.New(reflect.TypeOf(v)).Elem()
	rv.Set(reflect.ValueOf(v))
	var fix func(reflect.Value)
	fix = func(x reflect.Value) {
		switch x.Kind() {
		case reflect.String:
			x.SetString(string([]rune(x.String())))
		case reflect.Struct:
			for i := range x.NumField() {
				fix(x.Field(i))
			}
		case reflect.Slice:
			if x.IsNil() {
				return
			}
			c := reflect.MakeSlice(x.Type(), x.Len(), x.Len())
			reflect.Copy(c, x)
			for i := range c.Len() {
				fix(c.Index(i))
			}
			x.Set(c)
		case reflect.Map:
			if x.IsNil() {
				return
			}
			// Written in key order; decoding keeps the last of the keys
			// that invalid UTF-8 made equal.
			m := reflect.MakeMap(x.Type())
			keys := x.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
			for _, k := range keys {
				m.SetMapIndex(reflect.ValueOf(string([]rune(k.String()))), x.MapIndex(k))
			}
			x.Set(m)
		}
	}
	fix(rv)
	return rv.Interface()
}

var marshalStrings = []string{
	"", "plain", `quote " and backslash \ and slash /`, "ctl \x00\x01\x08\x0c\n\r\t\x1f\x7f",
	"html <script>&amp;</script>", "é ü 日本 😀", "\u2028\u2029", "bad \xff\xfe utf8 \xc3", "\xed\xa0\x80 surrogate", "\ufffd",
	"info", "medium", "approve", "request_changes",
}

func TestMarshalBuiltins(t *testing.T) {
	reg := newRegistry(t, nil)
	for _, s1 := range marshalStrings {
		for _, s2 := range marshalStrings {
			for _, v := range builtinValues(s1, s2, "high", 3, 0.25, true) {
				checkMarshal(t, reg, v)
			}
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 1.5e300, math.MaxFloat64, math.SmallestNonzeroFloat64, 123456789.123, 1e-9, 3e-10} {
		for _, v := range builtinValues("a", "b", "info", -7, f, false) {
			checkMarshal(t, reg, v)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for _, v := range builtinValues("a", "b", "c", 0, f, false) {
			checkMarshal(t, reg, v)
		}
	}
}

func FuzzMarshalBuiltin(f *testing.F) {
	for i, s := range marshalStrings {
		f.Add(s, marshalStrings[(i+1)%len(marshalStrings)], "low", i, float64(i)/7, i%2 == 0)
	}
	f.Add("a", "b", "c", 0, math.NaN(), false)
	f.Add("<", ">", "&", -1, 1e21, true)
	reg := newRegistry(f, nil)
	f.Fuzz(func(t *testing.T, s1, s2, s3 string, n int, x float64, flag bool) {
		for _, v := range builtinValues(s1, s2, s3, n, x, flag) {
			checkMarshal(t, reg, v)
		}
	})
}
