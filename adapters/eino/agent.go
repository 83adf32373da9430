package eino

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/bound"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// Name is the bridge's name: the "tool" member of the tool events it
// records (docs/protocol.md §2.3).
const Name = "eino"

// DefaultProgressBytes is how much streamed text Options.ProgressBytes
// gathers by default before it stores a task.progress.
const DefaultProgressBytes = 64

// Options configure an Agent. The zero value (or nil) is the defaults.
type Options struct {
	// Name is the agent's display name and the default capability's
	// "skill:<slug of Name>". Default: the agent id without "agent:".
	Name string
	// Description is the card's description. Default: none.
	Description string
	// Capabilities replace the card's default capability
	// "skill:<slug of Name>" (each an id of docs/protocol.md §1.5).
	Capabilities []string
	// Tools are the graph's tools, listed on the card as the tools of
	// every capability ("eino:<name>", the name the model sees). A
	// compiled runnable does not tell its tools, so the caller does.
	Tools []tool.BaseTool
	// CheckPoints is the CheckPointStore the graph was compiled with
	// (compose.WithCheckPointStore); nil when it has none. With one, each
	// run is given the checkpoint id "clutch/<task id>" and an interrupt
	// becomes a durable question the graph resumes from; a
	// [*CheckPointStore] keeps the checkpoint in the Clutch artifact store
	// and its ref in the question. Without one, an interrupt ends the
	// task with INPUT_REQUIRED (there is nothing to resume from).
	CheckPoints compose.CheckPointStore
	// Stream runs the graph with Stream instead of Invoke and stores its
	// output text as task.progress events as it comes. The runnable's
	// output must be *schema.Message or string.
	Stream bool
	// ProgressBytes is how many bytes of streamed text one task.progress
	// gathers at least (the last one takes what is left). Default
	// DefaultProgressBytes; 1 stores every chunk.
	ProgressBytes int
	// Model names the model in x.clutch.model_call events when the
	// model does not say (eino's model.Config). Default: the graph node's
	// name, else the model's type.
	Model string
	// ResultType is the payload_type of the result ("" untyped).
	ResultType string
	// ResumeValue turns a person's answer into the value each interrupted
	// component gets on resume (compose.GetResumeContext). Default: the
	// answer decoded from JSON (a string answer is a Go string, an
	// approval a map[string]any).
	ResumeValue func(q *protocol.Question, answer json.RawMessage) (any, error)
	// CallOptions are added to every run (compose.WithCallbacks of the
	// caller's own handlers, node options).
	CallOptions []compose.Option
}

// Agent is an eino compose.Runnable as a Clutch agent: register
// a.Handle under a.Card() (router.Register).
type Agent[I, O any] struct {
	id   string
	x    compose.Runnable[I, O]
	opts Options
	card *protocol.AgentCard
}

// New wraps the runnable x — a compiled eino Graph, Chain or Workflow —
// as the agent agentID ("agent:..."). opts may be nil.
func New[I, O any](agentID string, x compose.Runnable[I, O], opts *Options) (*Agent[I, O], error) {
	if !strings.HasPrefix(agentID, protocol.PrefixAgent) || len(agentID) == len(protocol.PrefixAgent) {
		return nil, optionsError(fmt.Sprintf("agent id %q does not start with %q", agentID, protocol.PrefixAgent))
	}
	if x == nil {
		return nil, optionsError("no runnable for " + agentID)
	}
	a := &Agent[I, O]{id: agentID, x: x}
	if opts != nil {
		a.opts = *opts
	}
	o := &a.opts
	if o.Name == "" {
		o.Name = strings.TrimPrefix(agentID, protocol.PrefixAgent)
	}
	if o.ProgressBytes < 0 {
		return nil, optionsError(fmt.Sprintf("ProgressBytes %d is negative", o.ProgressBytes))
	}
	if o.ProgressBytes == 0 {
		o.ProgressBytes = DefaultProgressBytes
	}
	if o.Stream {
		var out O
		switch any(out).(type) {
		case *schema.Message, string:
		default:
			return nil, optionsError(fmt.Sprintf("Stream needs a graph whose output is a message or a string, not %T", out))
		}
	}
	caps := o.Capabilities
	if len(caps) == 0 {
		slug := adapters.Slug(o.Name)
		if slug == "" {
			slug = "eino"
		}
		caps = []string{"skill:" + slug}
	}
	var tools []string
	for i, t := range o.Tools {
		if t == nil {
			return nil, optionsError(fmt.Sprintf("Tools[%d] is nil", i))
		}
		info, err := t.Info(context.Background())
		if err != nil || info == nil || info.Name == "" {
			return nil, optionsError(fmt.Sprintf("Tools[%d] has no name", i))
		}
		tools = append(tools, Name+":"+info.Name)
	}
	card := &protocol.AgentCard{V: protocol.Version, AgentID: agentID, Display: &protocol.Display{Name: o.Name, Desc: o.Description}}
	for _, c := range caps {
		card.Capabilities = append(card.Capabilities, protocol.Capability{ID: c, Tools: tools})
	}
	if err := card.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	a.card = card
	return a, nil
}

// Card returns the agent's card: its name and description, its
// capabilities, and the graph's tools on each. Do not modify it.
func (a *Agent[I, O]) Card() *protocol.AgentCard { return a.card }

// checkpointID is the checkpoint of task t's graph.
func checkpointID(t *router.Task) string { return "clutch/" + t.ID() }

// Question details the bridge stores with a question, to resume from.
const (
	detailCheckpoint    = "eino_checkpoint_id"
	detailCheckpointRef = "eino_checkpoint_ref"
	detailInterruptIDs  = "eino_interrupt_ids"
)

// Handle runs the graph as the task t (a router.Handler). See the package
// doc for the mapping.
func (a *Agent[I, O]) Handle(ctx context.Context, t *router.Task) (*router.Result, error) {
	rn := &run{t: t, model: a.opts.Model}
	defer rn.wait()
	ctx = context.WithValue(ctx, runKey{}, rn)
	opts := make([]compose.Option, 0, len(a.opts.CallOptions)+2)
	opts = append(opts, compose.WithCallbacks(rn))
	opts = append(opts, a.opts.CallOptions...)
	if a.opts.CheckPoints != nil {
		opts = append(opts, compose.WithCheckPointID(checkpointID(t)))
		resumed, err := a.resume(ctx, t, rn)
		if err != nil {
			return nil, err
		}
		ctx = resumed
	}
	in, err := decodeInput[I](t.Request().Payload)
	if err != nil {
		return nil, err
	}
	out, err := a.runGraph(ctx, t, in, opts)
	rn.wait() // the stream readers record what they saw before the outcome
	rn.closeCalls(ctx, err)
	if err == nil {
		return a.result(out)
	}
	if info, ok := compose.ExtractInterruptInfo(err); ok {
		return nil, a.ask(ctx, t, rn, info)
	}
	return nil, rn.failure(ctx, err)
}

// resume returns ctx made to resume the graph from its checkpoint when
// the task's last answered question was an interrupt of this bridge.
func (a *Agent[I, O]) resume(ctx context.Context, t *router.Task, rn *run) (context.Context, error) {
	if t.Attempt() == 1 {
		return ctx, nil // a first attempt has no answers
	}
	asked, answer, err := t.Resumed(ctx)
	if err != nil || asked == nil {
		return ctx, err
	}
	if id, _ := asked.Details[detailCheckpoint].(string); id != checkpointID(t) {
		return ctx, nil // a question of somebody else: start afresh
	}
	if ref, _ := asked.Details[detailCheckpointRef].(string); ref != "" {
		cs, ok := a.opts.CheckPoints.(*CheckPointStore)
		if !ok {
			return nil, router.Fail(protocol.CodeInternal, "the checkpoint "+ref+" was kept in the artifact store, but Options.CheckPoints is not a CheckPointStore", false, nil)
		}
		data, err := cs.load(ctx, ref)
		if err != nil {
			return nil, err
		}
		rn.checkpoint = data
	}
	value, err := a.resumeValue(asked, answer)
	if err != nil {
		return nil, err
	}
	ids, _ := asked.Details[detailInterruptIDs].([]any)
	targets := make(map[string]any, len(ids))
	for _, id := range ids {
		if s, ok := id.(string); ok {
			targets[s] = value
		}
	}
	if len(targets) == 0 {
		return ctx, nil // paused before or after nodes: the checkpoint is all it needs
	}
	return compose.BatchResumeWithData(ctx, targets), nil
}

func (a *Agent[I, O]) resumeValue(q *protocol.Question, answer json.RawMessage) (any, error) {
	if a.opts.ResumeValue != nil {
		v, err := a.opts.ResumeValue(q, answer)
		if err != nil {
			return nil, router.Fail(protocol.CodeValidation, "mapping the answer to "+q.ID+" for the graph: "+err.Error(), false, nil)
		}
		return v, nil
	}
	var v any
	if err := json.Unmarshal(answer, &v); err != nil {
		return nil, router.Fail(protocol.CodeValidation, "the answer to "+q.ID+" is not JSON: "+err.Error(), false, nil)
	}
	return v, nil
}

// runGraph runs the graph once, with Invoke, or with Stream and its text
// as task.progress.
func (a *Agent[I, O]) runGraph(ctx context.Context, t *router.Task, in I, opts []compose.Option) (O, error) {
	var zero O
	if !a.opts.Stream {
		return a.x.Invoke(ctx, in, opts...)
	}
	sr, err := a.x.Stream(ctx, in, opts...)
	if err != nil {
		return zero, err
	}
	defer sr.Close()
	var chunks []O
	stream := t.TextStream(a.opts.ProgressBytes)
	for {
		c, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return zero, err
		}
		chunks = append(chunks, c)
		if err := stream.Write(ctx, textOf(c)); err != nil {
			return zero, err
		}
	}
	if err := stream.Flush(ctx); err != nil {
		return zero, err
	}
	return concat(chunks)
}

// Progress is the payload of the task.progress events of a streamed run:
// the text the graph put out since the last one.
type Progress = router.TextProgress

// textOf is the text of a stream chunk: a message's content or a string.
func textOf(v any) string {
	switch c := v.(type) {
	case *schema.Message:
		if c != nil {
			return c.Content
		}
	case string:
		return c
	}
	return ""
}

// concat joins a streamed output's chunks into the output.
func concat[O any](chunks []O) (O, error) {
	var out O
	switch any(out).(type) {
	case *schema.Message:
		msgs := make([]*schema.Message, 0, len(chunks))
		for _, c := range chunks {
			if m := any(c).(*schema.Message); m != nil {
				msgs = append(msgs, m)
			}
		}
		if len(msgs) == 0 {
			return out, nil
		}
		m, err := schema.ConcatMessages(msgs)
		if err != nil {
			return out, router.Fail(protocol.CodeInternal, "joining the streamed messages: "+err.Error(), false, nil)
		}
		return any(m).(O), nil
	case string:
		var b strings.Builder
		for _, c := range chunks {
			b.WriteString(any(c).(string))
		}
		return any(b.String()).(O), nil
	}
	return out, nil // New refuses Stream for other outputs
}

// decodeInput decodes the task.request payload raw into the graph's input: for a
// chat graph ([]*schema.Message, *schema.Message) a JSON string or an
// object {"text": ...} is the user message, and a message list is taken
// as it is; a string input takes a JSON string or {"text": ...}; any
// other type is decoded from the payload's JSON.
func decodeInput[I any](raw json.RawMessage) (I, error) {
	var in I
	text, isText := textPayload(raw)
	switch p := any(&in).(type) {
	case *[]*schema.Message:
		if isText {
			*p = []*schema.Message{schema.UserMessage(text)}
			return in, nil
		}
	case **schema.Message:
		if isText {
			*p = schema.UserMessage(text)
			return in, nil
		}
	case *string:
		if isText {
			*p = text
			return in, nil
		}
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, fmt.Errorf("%w: %w", ErrInput, err)
	}
	return in, nil
}

// textPayload returns the text of a payload that is a JSON string or an
// object whose only member is "text".
func textPayload(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var o struct {
		Text *string `json:"text"`
	}
	var all map[string]json.RawMessage
	if json.Unmarshal(raw, &all) == nil && len(all) == 1 && json.Unmarshal(raw, &o) == nil && o.Text != nil {
		return *o.Text, true
	}
	return "", false
}

// result makes the task's result of the graph's output: a message's
// content, a string as it is, any other value as JSON.
func (a *Agent[I, O]) result(out O) (*router.Result, error) {
	var p any = out
	switch v := any(out).(type) {
	case *schema.Message:
		if v != nil {
			p = v.Content
		}
	}
	return &router.Result{PayloadType: a.opts.ResultType, Payload: p}, nil
}

// ask makes the interrupt info the task's question and waits for its
// answer (router.Task.Ask).
func (a *Agent[I, O]) ask(ctx context.Context, t *router.Task, rn *run, info *compose.InterruptInfo) error {
	q := questionOf(info)
	if a.opts.CheckPoints == nil {
		return router.Fail(protocol.CodeInputRequired, q.Text, false, map[string]any{
			"not_resumable": "the graph has no checkpoint store: compile it with compose.WithCheckPointStore and set Options.CheckPoints"})
	}
	d := q.Details
	d[detailCheckpoint] = checkpointID(t)
	if ref := rn.checkpointRef(); ref != "" {
		d[detailCheckpointRef] = ref
	}
	_, err := t.Ask(ctx, q)
	switch {
	case errors.Is(err, router.ErrWaiting):
		return err // the task waits for the answer
	case errors.Is(err, router.ErrInvalidRequest):
		// A subtask cannot ask: it ends as one that needs input.
		d["not_asked"] = err.Error()
		return router.Fail(protocol.CodeInputRequired, q.Text, false, d)
	case err != nil:
		return err
	}
	return router.Fail(protocol.CodeInternal, "eino: the router answered a question the graph has not been asked", false, d)
}

// questionOf makes the question of a graph's interrupt: its text is each
// root cause's info (a string as it is; an object's "question", "message"
// or "text" member), one a line, else says which nodes it paused at.
func questionOf(info *compose.InterruptInfo) protocol.Question {
	var (
		texts      []string
		ids        []any
		interrupts []any
	)
	for _, ic := range info.InterruptContexts {
		if ic == nil || !ic.IsRootCause {
			continue
		}
		ids = append(ids, ic.ID)
		interrupts = append(interrupts, map[string]any{"id": ic.ID, "info": jsonValue(ic.Info)})
		if s := infoText(ic.Info); s != "" {
			texts = append(texts, s)
		}
	}
	text := strings.Join(texts, "\n")
	if text == "" {
		var at []string
		at = append(at, info.BeforeNodes...)
		at = append(at, info.AfterNodes...)
		text = "The eino graph paused: answer to continue"
		if len(at) > 0 {
			text = "The eino graph paused at " + strings.Join(at, ", ") + ": answer to continue"
		}
	}
	text = bound.Clip(text, protocol.MaxQuestionText)
	d := map[string]any{}
	if len(ids) > 0 {
		d[detailInterruptIDs] = ids
		d["interrupts"] = fitInterrupts(interrupts)
	}
	if len(info.BeforeNodes) > 0 {
		d["eino_before_nodes"] = info.BeforeNodes
	}
	if len(info.AfterNodes) > 0 {
		d["eino_after_nodes"] = info.AfterNodes
	}
	return protocol.Question{Text: text, Details: d}
}

// maxInterruptBytes bounds the interrupts' info a question's details
// carry; over it, each info is replaced by {"truncated": true, "bytes"}.
const maxInterruptBytes = 64 << 10

func fitInterrupts(list []any) []any {
	if b, _ := json.Marshal(list); len(b) <= maxInterruptBytes {
		return list
	}
	out := make([]any, len(list))
	for i, in := range list {
		io := in.(map[string]any)
		b, _ := json.Marshal(io["info"])
		out[i] = map[string]any{"id": io["id"], "info": map[string]any{"truncated": true, "bytes": len(b)}}
	}
	return out
}

// infoText is the text of an interrupt's info, "" when it has none.
func infoText(v any) string {
	if s, ok := v.(string); ok {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	if o, ok := jsonValue(v).(map[string]any); ok {
		for _, k := range []string{"question", "message", "text"} {
			if s, ok := o[k].(string); ok && s != "" {
				return strings.ToValidUTF8(s, "\uFFFD")
			}
		}
	}
	return ""
}

// jsonValue is v as plain JSON values (nil when it does not encode), so a
// question's details hold no Go types.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}
