package schema

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// builtinCases holds, for each built-in payload type, a valid payload, the
// required members of docs/protocol.md §3.3 (§10 for research.query.v1), and
// payloads with a member of the wrong type.
var builtinCases = []struct {
	payloadType string
	valid       string
	required    []string
	wrong       []struct{ member, raw, path, keyword string }
}{
	{
		payloadType: PayloadResearchSummary,
		valid:       `{"title":"Market analysis complete","findings":["fintech grows 12%/yr"],"citations":["https://example.com/report"]}`,
		required:    []string{"findings", "citations"},
		wrong: []struct{ member, raw, path, keyword string }{
			{"findings", `"one finding"`, "/findings", "type"},
			{"findings", `[1]`, "/findings/0", "type"},
			{"citations", `{"a":1}`, "/citations", "type"},
			{"title", `7`, "/title", "type"},
			{"extra", `true`, "/extra", "additionalProperties"},
		},
	},
	{
		payloadType: PayloadResearchSources,
		valid:       `{"sources":[{"url":"https://example.com/a","title":"A"}],"relevance_scores":{"https://example.com/a":0.92}}`,
		required:    []string{"sources", "relevance_scores"},
		wrong: []struct{ member, raw, path, keyword string }{
			{"sources", `{}`, "/sources", "type"},
			{"sources", `[{"url":5}]`, "/sources/0/url", "type"},
			{"sources", `[{}]`, "/sources/0/url", "required"},
			{"sources", `[{"url":"u","rank":1}]`, "/sources/0/rank", "additionalProperties"},
			{"relevance_scores", `[0.5]`, "/relevance_scores", "type"},
			{"relevance_scores", `{"a":"high"}`, "/relevance_scores/a", "type"},
		},
	},
	{
		payloadType: PayloadCodeOutput,
		valid:       `{"files":[{"path":"main.go","content":"package main"}],"language":"go","tests_passed":true}`,
		required:    []string{"files", "language", "tests_passed"},
		wrong: []struct{ member, raw, path, keyword string }{
			{"files", `"main.go"`, "/files", "type"},
			{"files", `[{"path":""}]`, "/files/0/path", "minLength"},
			{"files", `[{"content":"x"}]`, "/files/0/path", "required"},
			{"language", `["go"]`, "/language", "type"},
			{"tests_passed", `"yes"`, "/tests_passed", "type"},
		},
	},
	{
		payloadType: PayloadCodeReview,
		valid:       `{"findings":[{"message":"unchecked error","path":"main.go","line":12,"severity":"medium"}],"severity":"medium","patch_ref":"artifact:sha256:00"}`,
		required:    []string{"findings", "severity"},
		wrong: []struct{ member, raw, path, keyword string }{
			{"findings", `["unchecked error"]`, "/findings/0", "type"},
			{"findings", `[{"message":"m","line":0}]`, "/findings/0/line", "minimum"},
			{"findings", `[{"message":"m","severity":"fatal"}]`, "/findings/0/severity", "enum"},
			{"severity", `"fatal"`, "/severity", "enum"},
			{"severity", `3`, "/severity", "type"},
			{"patch_ref", `false`, "/patch_ref", "type"},
		},
	},
	{
		payloadType: PayloadReviewFeedback,
		valid:       `{"decision":"request_changes","comments":"close, but","blocking_issues":["no tests"]}`,
		required:    []string{"decision", "comments", "blocking_issues"},
		wrong: []struct{ member, raw, path, keyword string }{
			{"decision", `"maybe"`, "/decision", "enum"},
			{"comments", `["a"]`, "/comments", "type"},
			{"blocking_issues", `"none"`, "/blocking_issues", "type"},
			{"blocking_issues", `[null]`, "/blocking_issues/0", "type"},
		},
	},
	{
		payloadType: PayloadResearchQuery,
		valid:       `{"query":"fintech market size in 2026","max_sources":5}`,
		required:    []string{"query"},
		wrong: []struct{ member, raw, path, keyword string }{
			{"query", `""`, "/query", "minLength"},
			{"query", `42`, "/query", "type"},
			{"max_sources", `-1`, "/max_sources", "minimum"},
			{"max_sources", `1.5`, "/max_sources", "type"},
		},
	},
}

func TestBuiltins(t *testing.T) {
	reg := newRegistry(t, nil)
	var names []string
	for _, c := range builtinCases {
		names = append(names, c.payloadType)
	}
	slices.Sort(names)
	if diff := cmp.Diff(names, Builtins()); diff != "" {
		t.Fatalf("Builtins() (-want +got):\n%s", diff)
	}
	for _, c := range builtinCases {
		t.Run(c.payloadType, func(t *testing.T) {
			s, ok := reg.Lookup(c.payloadType)
			if !ok {
				t.Fatal("not registered")
			}
			if s.GoType() == nil {
				t.Error("built-in without a Go type")
			}
			// The schema requires exactly the seed's fields.
			var doc struct {
				Required []string `json:"required"`
			}
			if err := json.Unmarshal(s.JSON(), &doc); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.required, doc.Required); diff != "" {
				t.Errorf("required (-seed +schema):\n%s", diff)
			}

			t.Run("valid", func(t *testing.T) {
				if err := reg.Validate(c.payloadType, []byte(c.valid)); err != nil {
					t.Fatal(err)
				}
				// And it decodes into the Go type, strictly, and back.
				v := reflectNew(t, s)
				if err := json.Unmarshal([]byte(c.valid), v); err != nil {
					t.Fatal(err)
				}
				if err := reg.Validate(c.payloadType, mustJSON(t, v)); err != nil {
					t.Fatalf("re-encoded Go value: %v", err)
				}
			})
			for _, f := range c.required {
				t.Run("missing_"+f, func(t *testing.T) {
					ve := validationErr(t, reg.Validate(c.payloadType, []byte(without(t, c.valid, f))))
					if ve.PayloadType != c.payloadType || !hasViolation(ve, "/"+f, "required") || len(ve.Violations) != 1 {
						t.Fatalf("got %+v", ve)
					}
				})
			}
			for _, w := range c.wrong {
				t.Run("wrong_"+w.member+"_"+w.keyword, func(t *testing.T) {
					ve := validationErr(t, reg.Validate(c.payloadType, []byte(with(t, c.valid, w.member, w.raw))))
					if !hasViolation(ve, w.path, w.keyword) {
						t.Fatalf("want %s at %s, got %v", w.keyword, w.path, ve)
					}
				})
			}
			t.Run("not_an_object", func(t *testing.T) {
				ve := validationErr(t, reg.Validate(c.payloadType, []byte(`[]`)))
				if !hasViolation(ve, "", "type") {
					t.Fatalf("got %v", ve)
				}
			})
		})
	}
}

func reflectNew(t *testing.T, s *Schema) any {
	t.Helper()
	for _, b := range builtins {
		if b.payloadType == s.PayloadType() {
			return newOf(b.goType)
		}
	}
	t.Fatalf("no Go type for %s", s.PayloadType())
	return nil
}

// The Go types encode zero values (nil slices and maps) so that the
// payload still validates where the seed allows empty lists.
func TestBuiltinZeroValuesEncodeAsEmpty(t *testing.T) {
	reg := newRegistry(t, nil)
	for _, c := range []struct {
		payloadType string
		v           any
	}{
		{PayloadResearchSummary, ResearchSummary{}},
		{PayloadResearchSources, ResearchSources{}},
		{PayloadCodeOutput, CodeOutput{Language: "go"}},
		{PayloadCodeReview, &CodeReview{Severity: SeverityLow}},
		{PayloadReviewFeedback, ReviewFeedback{Decision: DecisionApprove}},
	} {
		if err := reg.Validate(c.payloadType, mustJSON(t, c.v)); err != nil {
			t.Errorf("%s: %s: %v", c.payloadType, mustJSON(t, c.v), err)
		}
	}
}

func TestNoBuiltins(t *testing.T) {
	reg := newRegistry(t, &Options{NoBuiltins: true})
	if reg.Len() != 0 {
		t.Fatalf("Len = %d", reg.Len())
	}
	if _, ok := reg.Lookup(PayloadResearchSummary); ok {
		t.Fatal("built-in registered with NoBuiltins")
	}
}

// MarshalJSON writes what encoding/json writes, with nil lists and maps as
// [] and {}; a score encoding/json cannot write is an error.
func TestBuiltinMarshalJSON(t *testing.T) {
	for _, c := range []struct {
		v    json.Marshaler
		want string
	}{
		{ResearchSummary{}, `{"findings":[],"citations":[]}`},
		{ResearchSummary{Title: "<a&b>", Findings: []string{"f"}, Citations: []string{}}, `{"title":"\u003ca\u0026b\u003e","findings":["f"],"citations":[]}`},
		{ResearchSources{}, `{"sources":[],"relevance_scores":{}}`},
		{ResearchSources{Sources: []Source{{URL: "u"}}, RelevanceScores: map[string]float64{"v": 1e-7, "u": 0.5}}, `{"sources":[{"url":"u"}],"relevance_scores":{"u":0.5,"v":1e-7}}`},
		{CodeOutput{Language: "go"}, `{"files":[],"language":"go","tests_passed":false}`},
		{CodeReview{Severity: SeverityLow}, `{"findings":[],"severity":"low"}`},
		{ReviewFeedback{Decision: DecisionApprove}, `{"decision":"approve","comments":"","blocking_issues":[]}`},
	} {
		got, err := c.v.MarshalJSON()
		require.NoError(t, err)
		assert.Equal(t, c.want, string(got))
		via, err := json.Marshal(c.v)
		require.NoError(t, err)
		assert.Equal(t, c.want, string(via))
	}
	_, err := ResearchSources{RelevanceScores: map[string]float64{"u": math.NaN()}}.MarshalJSON()
	assert.Error(t, err)
}
