package protocol

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The kinds of Question (docs/protocol.md §2.7).
const (
	// QuestionAsk is a question for a person: free text, a choice, or a
	// value of a JSON Schema.
	QuestionAsk = "question"
	// QuestionApproval asks a person to approve what an agent is about to
	// do; the answer is an [Approval].
	QuestionApproval = "approval"
)

// Limits of a Question.
const (
	MaxQuestionText    = 4096      // bytes of Question.Text
	MaxQuestionChoices = 32        // entries of Question.Choices
	MaxChoiceLength    = 256       // bytes of one choice
	MaxQuestionSchema  = 16 << 10  // bytes of Question.Schema
	MaxAnswerValue     = 256 << 10 // bytes of Answer.Value
)

// Question is the payload of a task.question (docs/protocol.md §2.7): what
// a task asks a person (or an agent), who may answer, and until when. The
// router fills ID and Index; the asking handler fills the rest.
type Question struct {
	// ID names the question: "<task_id>.q<index>".
	ID string `json:"question_id"`
	// Index is the question's place among the task's questions, from 0.
	Index int `json:"index"`
	// Kind is QuestionAsk (the default, "") or QuestionApproval.
	Kind string `json:"kind,omitempty"`
	// Text is what the person reads. Required.
	Text string `json:"text"`
	// Choices, when set, are the only answers accepted: the answer's value
	// is one of them, as a JSON string.
	Choices []string `json:"choices,omitempty"`
	// Schema, when set, is a JSON Schema (an object) the answer's value
	// must meet; a form is built from it.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Who may answer; nil means the task's requester.
	Who *Answerers `json:"who,omitempty"`
	// Deadline, when set, ends the task with TIMEOUT if no answer came.
	Deadline time.Time `json:"deadline,omitzero"`
	// Details carry what the question is about (for an approval: the tool,
	// capability or delegation, and its arguments).
	Details map[string]any `json:"details,omitempty"`
}

// Answerers says who may answer a Question: anyone who is one of them.
type Answerers struct {
	// Requester: the sender of the task's task.request.
	Requester bool `json:"requester,omitempty"`
	// Agents: these agent ids (people are agents too, "agent:alice").
	Agents []string `json:"agents,omitempty"`
	// Scopes: any caller holding one of these scopes (package auth).
	Scopes []string `json:"scopes,omitempty"`
}

// Answer is the payload of a task.answer: the answer to one question. Its
// sender (from) is who answered, stamped by the surface that took it.
type Answer struct {
	QuestionID string          `json:"question_id"`
	Value      json.RawMessage `json:"value"`
}

// The decisions of an Approval.
const (
	Approve = "approve"
	Reject  = "reject"
	Edit    = "edit"
)

// Approval is the value of the answer to a QuestionApproval.
type Approval struct {
	// Decision is Approve, Reject or Edit.
	Decision string `json:"decision"`
	// Reason says why; expected with Reject.
	Reason string `json:"reason,omitempty"`
	// Arguments replace the proposed arguments (Edit only).
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Validate checks a question as asked (docs/protocol.md §2.7): a kind it
// knows, text of at most MaxQuestionText bytes, at most MaxQuestionChoices
// distinct non-empty choices of at most MaxChoiceLength bytes, a schema
// that is a JSON object of at most MaxQuestionSchema bytes (not with
// choices, nor on an approval), valid agent ids among the answerers. An
// error is a *Error of code INVALID_FIELD whose Path names the field.
func (q *Question) Validate() error {
	switch {
	case q.Kind != "" && q.Kind != QuestionAsk && q.Kind != QuestionApproval:
		return invalid(CodeInvalidField, "payload.kind", "is "+strconv.Quote(q.Kind)+", not question or approval")
	case q.Text == "":
		return invalid(CodeInvalidField, "payload.text", "is required")
	case len(q.Text) > MaxQuestionText || !utf8.ValidString(q.Text):
		return invalid(CodeInvalidField, "payload.text", "must be valid UTF-8 of at most "+strconv.Itoa(MaxQuestionText)+" bytes")
	case len(q.Choices) > MaxQuestionChoices:
		return invalid(CodeInvalidField, "payload.choices", "has more than "+strconv.Itoa(MaxQuestionChoices)+" entries")
	case len(q.Schema) > MaxQuestionSchema:
		return invalid(CodeInvalidField, "payload.schema", "is over "+strconv.Itoa(MaxQuestionSchema)+" bytes")
	case len(q.Schema) > 0 && (len(q.Choices) > 0 || q.Kind == QuestionApproval):
		return invalid(CodeInvalidField, "payload.schema", "goes with neither choices nor an approval")
	case len(q.Choices) > 0 && q.Kind == QuestionApproval:
		return invalid(CodeInvalidField, "payload.choices", "an approval's answers are approve, reject and edit")
	}
	for i, c := range q.Choices {
		if c == "" || len(c) > MaxChoiceLength || !utf8.ValidString(c) || slices.Contains(q.Choices[:i], c) {
			return invalid(CodeInvalidField, "payload.choices", "entry "+strconv.Itoa(i)+" is empty, repeated, or not UTF-8 of at most "+strconv.Itoa(MaxChoiceLength)+" bytes")
		}
	}
	if len(q.Schema) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(q.Schema, &obj); err != nil {
			return invalid(CodeInvalidField, "payload.schema", "is not a JSON object")
		}
	}
	if q.Who != nil {
		for _, a := range q.Who.Agents {
			if err := checkAgent("payload.who.agents", a, false); err != nil {
				return err
			}
		}
		for _, s := range q.Who.Scopes {
			if s == "" || len(s) > 64 {
				return invalid(CodeInvalidField, "payload.who.scopes", "a scope is 1 to 64 bytes")
			}
		}
	}
	return nil
}

// MayAnswer reports whether agentID, holding scopes, may answer q of a
// task whose request requester sent.
func (q *Question) MayAnswer(agentID, requester string, scopes []string) bool {
	w := q.Who
	if w == nil {
		return agentID == requester
	}
	if w.Requester && agentID == requester {
		return true
	}
	if slices.Contains(w.Agents, agentID) {
		return true
	}
	for _, s := range scopes {
		if slices.Contains(w.Scopes, s) {
			return true
		}
	}
	return false
}

// CheckValue checks an answer's value against what q accepts: JSON of at
// most MaxAnswerValue bytes; one of Choices, as a JSON string, when q has
// them; an Approval with a known decision (arguments with Edit only) for
// an approval. A JSON Schema is checked by the caller (the router uses its
// Validator). An error is a *Error of code INVALID_FIELD.
func (q *Question) CheckValue(v json.RawMessage) error {
	if len(v) == 0 || len(v) > MaxAnswerValue || !json.Valid(v) {
		return invalid(CodeInvalidField, "payload.value", "must be JSON of at most "+strconv.Itoa(MaxAnswerValue)+" bytes")
	}
	if len(q.Choices) > 0 {
		var s string
		if err := json.Unmarshal(v, &s); err != nil || !slices.Contains(q.Choices, s) {
			return invalid(CodeInvalidField, "payload.value", "must be one of the question's choices")
		}
	}
	if q.Kind == QuestionApproval {
		var a Approval
		d := json.NewDecoder(bytes.NewReader(v))
		d.DisallowUnknownFields()
		if err := d.Decode(&a); err != nil {
			return invalid(CodeInvalidField, "payload.value", "an approval is {decision, reason?, arguments?}")
		}
		switch {
		case a.Decision != Approve && a.Decision != Reject && a.Decision != Edit:
			return invalid(CodeInvalidField, "payload.value.decision", "is "+strconv.Quote(a.Decision)+", not approve, reject or edit")
		case (a.Decision == Edit) != (len(a.Arguments) > 0):
			return invalid(CodeInvalidField, "payload.value.arguments", "come with an edit, and only with an edit")
		}
	}
	return nil
}

// QuestionID is the id of a task's index-th question, "<task_id>.q<index>".
func QuestionID(taskID string, index int) string {
	return taskID + ".q" + strconv.Itoa(index)
}

// ParseQuestionID returns the task id and index of a question id, and
// false when id is not of the form "<task_id>.q<n>".
func ParseQuestionID(id string) (taskID string, index int, ok bool) {
	i := strings.LastIndex(id, ".q")
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(id[i+2:])
	if err != nil || n < 0 || strconv.Itoa(n) != id[i+2:] {
		return "", 0, false
	}
	return id[:i], n, true
}
