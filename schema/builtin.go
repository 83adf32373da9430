package schema

import (
	"encoding/json"
	"reflect"

	"github.com/invopop/jsonschema"
)

// The built-in payload types: the five of docs/protocol.md §3.3, plus
// research.query.v1, the payload of the task.request that starts the seed's
// end-to-end example (§10). Each has a Go type, from which its schema is
// reflected.
const (
	PayloadResearchQuery   = "research.query.v1"   // [ResearchQuery] (§10)
	PayloadResearchSummary = "research.summary.v1" // [ResearchSummary] (§3.3)
	PayloadResearchSources = "research.sources.v1" // [ResearchSources] (§3.3)
	PayloadCodeOutput      = "code.output.v1"      // [CodeOutput] (§3.3)
	PayloadCodeReview      = "code.review.v1"      // [CodeReview] (§3.3)
	PayloadReviewFeedback  = "review.feedback.v1"  // [ReviewFeedback] (§3.3)
)

var builtins = []struct {
	payloadType string
	goType      reflect.Type
}{
	{PayloadCodeOutput, reflect.TypeFor[CodeOutput]()},
	{PayloadCodeReview, reflect.TypeFor[CodeReview]()},
	{PayloadResearchQuery, reflect.TypeFor[ResearchQuery]()},
	{PayloadResearchSources, reflect.TypeFor[ResearchSources]()},
	{PayloadResearchSummary, reflect.TypeFor[ResearchSummary]()},
	{PayloadReviewFeedback, reflect.TypeFor[ReviewFeedback]()},
}

// Builtins returns the built-in payload types, sorted. A registry made by
// [New] holds them unless [Options].NoBuiltins is set.
func Builtins() []string {
	out := make([]string, len(builtins))
	for i, b := range builtins {
		out[i] = b.payloadType
	}
	return out
}

func registerBuiltins(r *Registry) error {
	for _, b := range builtins {
		if err := r.registerType(b.payloadType, b.goType); err != nil {
			return err
		}
	}
	return nil
}

// All built-in structs refuse members they do not define (the reflected
// schemas have "additionalProperties": false): a new member is a new
// version. The MarshalJSON methods of those with lists or maps write nil
// ones as [] and {}, since null would fail the schema, and otherwise what
// encoding/json writes; encoding/json v2 (which protocol uses) writes []
// and {} anyway.

// orEmpty returns s, or an empty slice for nil, which encodes as [].
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// ResearchQuery is the payload of research.query.v1: the request that starts
// a research task (docs/protocol.md §10, step 1). Required: query.
type ResearchQuery struct {
	// Query is the question to research, in plain language.
	Query string `json:"query" jsonschema:"minLength=1"`
	// Context is optional background for the researcher.
	Context string `json:"context,omitempty"`
	// MaxSources caps how many sources to consult; 0 means no preference.
	MaxSources int `json:"max_sources,omitempty,omitzero" jsonschema:"minimum=0"`
}

// ResearchSummary is the payload of research.summary.v1 (docs/protocol.md §3.3, the
// task.result of §1.1 and §10). Required: findings[], citations[].
type ResearchSummary struct {
	// Title is an optional headline ("Market analysis complete").
	Title string `json:"title,omitempty"`
	// Findings are the conclusions, one statement each.
	Findings []string `json:"findings"`
	// Citations support the findings: URLs, artifact: references or
	// bibliographic strings.
	Citations []string `json:"citations"`
}

// MarshalJSON writes nil slices as [].
func (p ResearchSummary) MarshalJSON() ([]byte, error) {
	type plain ResearchSummary // without this method
	q := plain(p)
	q.Findings, q.Citations = orEmpty(q.Findings), orEmpty(q.Citations)
	return json.Marshal(q)
}

// ResearchSources is the payload of research.sources.v1 (docs/protocol.md §3.3).
// Required: sources[], relevance_scores.
type ResearchSources struct {
	// Sources are the sources found.
	Sources []Source `json:"sources"`
	// RelevanceScores maps a source's URL to its relevance, conventionally
	// between 0 and 1 like the routing scores of §4.3.
	RelevanceScores map[string]float64 `json:"relevance_scores"`
}

// MarshalJSON writes a nil slice as [] and a nil map as {}. A score that
// is NaN or infinite is an error, as with encoding/json.
func (p ResearchSources) MarshalJSON() ([]byte, error) {
	type plain ResearchSources
	q := plain(p)
	q.Sources = orEmpty(q.Sources)
	if q.RelevanceScores == nil {
		q.RelevanceScores = map[string]float64{}
	}
	return json.Marshal(q)
}

// Source is one source of a [ResearchSources] payload. Required: url.
type Source struct {
	URL     string `json:"url" jsonschema:"minLength=1"`
	Title   string `json:"title,omitempty"`
	Excerpt string `json:"excerpt,omitempty"`
}

// CodeOutput is the payload of code.output.v1 (docs/protocol.md §3.3). Required:
// files[], language, tests_passed.
type CodeOutput struct {
	// Files are the files produced or changed.
	Files []File `json:"files"`
	// Language is the main programming language ("go", "python", ...).
	Language string `json:"language"`
	// TestsPassed reports whether the tests passed after the change.
	TestsPassed bool `json:"tests_passed"`
}

// MarshalJSON writes a nil slice as [].
func (p CodeOutput) MarshalJSON() ([]byte, error) {
	type plain CodeOutput
	q := plain(p)
	q.Files = orEmpty(q.Files)
	return json.Marshal(q)
}

// File is one file of a [CodeOutput]: its path and either its content
// inline or a reference to it in the artifact store (docs/protocol.md §8.2,
// "artifact:sha256:<hex>"). Required: path.
type File struct {
	Path    string `json:"path" jsonschema:"minLength=1"`
	Content string `json:"content,omitempty"`
	Ref     string `json:"ref,omitempty"`
}

// CodeReview is the payload of code.review.v1 (docs/protocol.md §3.3). Required:
// findings[], severity; patch_ref is optional (the seed's "patch_ref?").
type CodeReview struct {
	// Findings are the review's remarks.
	Findings []ReviewFinding `json:"findings"`
	// Severity is the overall severity, conventionally the highest of the
	// findings'.
	Severity Severity `json:"severity"`
	// PatchRef optionally references a proposed patch, e.g. an
	// "artifact:sha256:<hex>".
	PatchRef string `json:"patch_ref,omitempty"`
}

// MarshalJSON writes a nil slice as [].
func (p CodeReview) MarshalJSON() ([]byte, error) {
	type plain CodeReview
	q := plain(p)
	q.Findings = orEmpty(q.Findings)
	return json.Marshal(q)
}

// ReviewFinding is one remark of a [CodeReview]. Required: message.
type ReviewFinding struct {
	Message  string   `json:"message" jsonschema:"minLength=1"`
	Path     string   `json:"path,omitempty"`
	Line     int      `json:"line,omitempty,omitzero" jsonschema:"minimum=1"`
	Severity Severity `json:"severity,omitempty"`
}

// Severity grades a code review finding.
type Severity string

// The severities, from least to most severe.
const (
	SeverityInfo     Severity = "info"
	SeverityLow      Severity = "low"
	SeverityMedium   Severity = "medium"
	SeverityHigh     Severity = "high"
	SeverityCritical Severity = "critical"
)

// JSONSchema restricts a Severity to its five values.
func (Severity) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Enum: []any{"info", "low", "medium", "high", "critical"}}
}

// ReviewFeedback is the payload of review.feedback.v1 (docs/protocol.md §3.3; the
// REVIEW of Appendix A). Required: decision, comments, blocking_issues[].
type ReviewFeedback struct {
	// Decision is the reviewer's verdict.
	Decision Decision `json:"decision"`
	// Comments is the reviewer's free-text feedback (the seed writes
	// "comments" without [], so it is one text).
	Comments string `json:"comments"`
	// BlockingIssues lists what must change before approval; empty when
	// approved.
	BlockingIssues []string `json:"blocking_issues"`
}

// MarshalJSON writes a nil slice as [].
func (p ReviewFeedback) MarshalJSON() ([]byte, error) {
	type plain ReviewFeedback
	q := plain(p)
	q.BlockingIssues = orEmpty(q.BlockingIssues)
	return json.Marshal(q)
}

// Decision is the verdict of a [ReviewFeedback].
type Decision string

// The decisions.
const (
	DecisionApprove        Decision = "approve"
	DecisionRequestChanges Decision = "request_changes"
	DecisionReject         Decision = "reject"
)

// JSONSchema restricts a Decision to its three values.
func (Decision) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Enum: []any{"approve", "request_changes", "reject"}}
}
