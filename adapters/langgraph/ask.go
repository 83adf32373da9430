package langgraph

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/clutchprotocol/clutch/adapters/internal/bound"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// maxInterruptBytes bounds the interrupts a question carries in its
// details; over it, each interrupt keeps its id and its value becomes a
// marker {"truncated": true, "bytes", "sha256"}.
const maxInterruptBytes = 256 << 10

// wait stops the task on the interrupts of the LangGraph thread tid (the
// run runID, "" when not known): the task asks a question made of them
// (router.Task.Ask) and waits for its answer. A task that cannot ask — a
// subtask, whose parent holds it while it delegates — ends with
// INPUT_REQUIRED instead, and a follow-up request on the thread answers.
// The interrupts are the state's (what an answer is matched against),
// else those of the stream.
func (rm *Remote) wait(ctx context.Context, t *router.Task, tid, runID string, state *threadState, streamed []any) (*router.Result, error) {
	interrupts, _ := boundCopy(state.interrupts(), "").([]any) // the stream's are bounded already
	if len(interrupts) == 0 {
		interrupts = streamed
	}
	q := questionOf(interrupts, state.Next)
	next := make([]any, len(state.Next))
	for i, n := range state.Next {
		next[i] = n
	}
	details := map[string]any{"interrupts": fitInterrupts(interrupts), "langgraph_next": next, "langgraph_thread_id": tid}
	if runID != "" {
		details["langgraph_run_id"] = runID
	}
	if cp := state.Checkpoint.CheckpointID; cp != "" {
		details["langgraph_checkpoint_id"] = cp
	}
	q.Details = details
	_, err := t.Ask(ctx, q)
	switch {
	case errors.Is(err, router.ErrWaiting):
		return nil, err // the task waits for the answer
	case errors.Is(err, router.ErrInvalidRequest):
		// The router refuses the question (a subtask cannot ask; a schema
		// needs a Validator that checks values): the attempt ends as one
		// that needs input, and a follow-up request answers.
		details["not_asked"] = cut(err.Error())
		return nil, router.Fail(protocol.CodeInputRequired, q.Text, false, details)
	case err != nil:
		return nil, err
	}
	// Ask returned a recorded answer, which it does not after Resumed.
	return nil, router.Fail(protocol.CodeInternal, "langgraph: the router answered a question the graph has not been asked", false, details)
}

// questionOf makes the question of a thread's interrupts: its text is
// each interrupt value's (a string as it is; an object's "question",
// "message" or "description" string member), one a line, else says which
// nodes the run paused before. A lone interrupt whose value is an object
// with "choices" (strings) or a "schema" (a JSON Schema object) gives the
// question those, when they are valid (protocol.Question.Validate).
func questionOf(interrupts []any, next []string) protocol.Question {
	var texts []string
	for _, in := range interrupts {
		io, _ := in.(map[string]any)
		if s := textOf(io["value"]); s != "" && !slices.Contains(texts, s) {
			texts = append(texts, s)
		}
	}
	text := strings.Join(texts, "\n")
	if text == "" {
		text = "LangGraph run paused: answer to continue"
		if len(next) > 0 {
			text = "LangGraph run paused before " + strings.Join(next, ", ") + ": answer to continue"
		}
	}
	q := protocol.Question{Text: bound.Clip(text, protocol.MaxQuestionText)}
	if len(interrupts) != 1 {
		return q
	}
	io, _ := interrupts[0].(map[string]any)
	v, _ := io["value"].(map[string]any)
	if list, ok := v["choices"].([]any); ok {
		for _, c := range list {
			s, ok := c.(string)
			if !ok {
				q.Choices = nil
				break
			}
			q.Choices = append(q.Choices, s)
		}
	}
	if s, ok := v["schema"].(map[string]any); ok {
		q.Schema = jsonOf(s)
	}
	if q.Validate() != nil { // the text is valid: choices or schema are not
		q.Choices, q.Schema = nil, nil
	}
	return q
}

// textOf is the text of an interrupt value, "" when it has none.
func textOf(v any) string {
	switch t := v.(type) {
	case string:
		return strings.ToValidUTF8(t, "\uFFFD")
	case map[string]any:
		for _, k := range []string{"question", "message", "description"} {
			if s, ok := t[k].(string); ok && s != "" {
				return strings.ToValidUTF8(s, "\uFFFD")
			}
		}
	}
	return ""
}

// interrupts returns the pending interrupts of the thread state's tasks,
// each once. A task that has a result went on after its interrupt (an
// answer resumed it while another task still waits), and one that has an
// error failed after it: their interrupts are not pending.
func (st *threadState) interrupts() []any {
	var out []any
	seen := map[string]bool{}
	for _, task := range st.Tasks {
		if nonNull(task.Result) || nonNull(task.Error) {
			continue
		}
		for _, in := range task.Interrupts {
			io, _ := in.(map[string]any)
			id, _ := io["id"].(string)
			if id != "" {
				if seen[id] {
					continue
				}
				seen[id] = true
			}
			out = append(out, in)
		}
	}
	return out
}

// waitsFor reports whether the thread still waits on what the question q
// asked: its pending interrupts are the question's (the same ids), or,
// when the state lists none (a static breakpoint), its checkpoint is the
// one the question was asked at. An interrupt id names one interrupt()
// call of one node task, so after a resume the ids differ even when the
// same node asks again (and the checkpoint may not: the JS server keeps
// it while a node interrupts again).
func (st *threadState) waitsFor(q *protocol.Question) bool {
	list, _ := q.Details["interrupts"].([]any)
	asked, pending := interruptIDs(list), interruptIDs(st.interrupts())
	if len(pending) > 0 {
		slices.Sort(asked)
		slices.Sort(pending)
		return slices.Equal(asked, pending)
	}
	cp, _ := q.Details["langgraph_checkpoint_id"].(string)
	return cp == "" || cp == st.Checkpoint.CheckpointID
}

// interruptIDs returns the distinct ids of interrupts.
func interruptIDs(interrupts []any) []string {
	var ids []string
	for _, in := range interrupts {
		io, _ := in.(map[string]any)
		if id, _ := io["id"].(string); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// resumeWith is the resume value of `command: {resume: …}` for the answer
// to q: the answer's value as it is for one interrupt (or a static
// breakpoint); for several, the value when it is an object whose keys are
// interrupt ids of the question (a value per interrupt, LangGraph's
// resume map), else a map giving the value to each interrupt.
func resumeWith(q *protocol.Question, value json.RawMessage) any {
	list, _ := q.Details["interrupts"].([]any)
	ids := interruptIDs(list)
	if len(ids) < 2 {
		return value
	}
	var byID map[string]json.RawMessage
	if json.Unmarshal(value, &byID) == nil && len(byID) > 0 {
		all := true
		for k := range byID {
			all = all && slices.Contains(ids, k)
		}
		if all {
			return value
		}
	}
	each := make(map[string]json.RawMessage, len(ids))
	for _, id := range ids {
		each[id] = value
	}
	return each
}

// fitInterrupts makes interrupts (redacted and bounded as the translator
// bounds them) fit a question's details: over maxInterruptBytes in all,
// each value is replaced by a marker of what it was (the ids stay: they
// are what an answer is matched against).
func fitInterrupts(list []any) []any {
	if list == nil {
		return []any{}
	}
	if len(jsonOf(list)) <= maxInterruptBytes {
		return list
	}
	list = slices.Clone(list)
	for i, in := range list {
		io, ok := in.(map[string]any)
		if !ok {
			io = map[string]any{"value": in}
		}
		b := jsonOf(io["value"])
		sum := sha256.Sum256(b)
		o := map[string]any{"value": map[string]any{"truncated": true, "bytes": len(b), "sha256": hex.EncodeToString(sum[:])}}
		if id, ok := io["id"]; ok {
			o["id"] = id
		}
		list[i] = o
	}
	return list
}

// nonNull reports whether a JSON member is present and not null.
func nonNull(raw json.RawMessage) bool {
	r := bytes.TrimSpace(raw)
	return len(r) > 0 && string(r) != "null"
}
