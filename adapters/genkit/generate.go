package genkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/firebase/genkit/go/ai"
	gk "github.com/firebase/genkit/go/genkit"

	"github.com/clutchprotocol/clutch/adapters/internal/bound"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// CheckpointMediaType is the media type of the artifact in which an
// interrupted Generate keeps what it resumes from.
const CheckpointMediaType = "application/vnd.clutch.genkit-checkpoint+json"

// Question details the bridge stores with a question, to resume from.
const (
	detailCheckpointRef = "genkit_checkpoint_ref"
	detailGenerate      = "genkit_generate"
	detailInterrupts    = "interrupts"
)

// checkpoint is what an interrupted Generate call resumes from: the
// responses of the flow's Generate calls before it, and the interrupted
// call's conversation and settings.
type checkpoint struct {
	// Index is the interrupted call's place among the flow's Generate
	// calls, from 0.
	Index int `json:"index"`
	// Done are the responses of the calls before it, in order.
	Done []json.RawMessage `json:"done,omitempty"`
	// Model is the model's name ("provider/model").
	Model string `json:"model"`
	// Messages are the conversation, ending with the model's message whose
	// tool requests were interrupted.
	Messages []*ai.Message `json:"messages"`
	// Tools, Config and ToolChoice are the interrupted call's.
	Tools      []string      `json:"tools,omitempty"`
	Config     any           `json:"config,omitempty"`
	ToolChoice ai.ToolChoice `json:"toolChoice,omitempty"`
	// Interrupts are the interrupted tool requests.
	Interrupts []*ai.Part `json:"interrupts"`
}

// Generate is genkit.Generate for flows that the bridge runs: in a flow
// that runs as a Clutch task, a generate loop that a tool interrupts
// (ToolContext.Interrupt) makes the task ask a person (router.Task.Ask),
// and the answer restarts or responds to the interrupted tool call
// (Options.Resume) when the task runs again. Anywhere else it is
// genkit.Generate.
//
// The first time, the interrupted response is kept as a checkpoint in the
// artifact store (Options.Store), the question is stored and Generate
// returns an error that matches router.ErrWaiting: the flow returns it
// (return nil, err) and the task waits, holding no goroutine. When the
// answer comes, the flow runs again from its start: its Generate calls
// before the interrupted one return their recorded responses without
// calling the model, the interrupted one goes on from the checkpoint with
// genkit.Generate's WithToolRestarts or WithToolResponses, and the calls
// after it run as usual. So the flow must make the same Generate calls in
// the same order each time it runs, one after another, and must not
// repeat side effects it took before them (Task.Ask's contract).
func Generate(ctx context.Context, g *gk.Genkit, opts ...ai.GenerateOption) (*ai.ModelResponse, error) {
	rn, _ := ctx.Value(runKey{}).(*run)
	if rn == nil {
		return gk.Generate(ctx, g, opts...)
	}
	rn.mu.Lock()
	i := rn.calls
	rn.calls++
	cp := rn.checkpoint
	rn.mu.Unlock()
	var (
		resp *ai.ModelResponse
		err  error
	)
	switch {
	case cp != nil && i < cp.Index:
		resp = new(ai.ModelResponse)
		if i >= len(cp.Done) || json.Unmarshal(cp.Done[i], resp) != nil {
			return nil, router.Fail(protocol.CodeContextUnavailable, fmt.Sprintf("the checkpoint has no response of Generate call %d", i), false, nil)
		}
		rn.record(resp)
		return resp, nil
	case cp != nil && i == cp.Index:
		resp, err = rn.resumeCall(ctx, g, cp)
	default:
		resp, err = gk.Generate(ctx, g, opts...)
	}
	if err != nil {
		return nil, err
	}
	if resp.FinishReason == ai.FinishReasonInterrupted && len(resp.Interrupts()) > 0 {
		return nil, rn.ask(ctx, i, resp)
	}
	rn.record(resp)
	return resp, nil
}

func (rn *run) record(resp *ai.ModelResponse) {
	rn.mu.Lock()
	rn.done = append(rn.done, resp)
	rn.mu.Unlock()
}

// resumeCall goes on with the interrupted Generate call of cp, with the
// person's answer.
func (rn *run) resumeCall(ctx context.Context, g *gk.Genkit, cp *checkpoint) (*ai.ModelResponse, error) {
	var respond, restart []*ai.Part
	for _, p := range cp.Interrupts {
		part, err := rn.resumePart(p)
		if err != nil {
			return nil, err
		}
		switch {
		case part.IsToolResponse():
			respond = append(respond, part)
		case part.IsToolRequest():
			restart = append(restart, part)
		default:
			return nil, router.Fail(protocol.CodeValidation, "Options.Resume gave neither a tool response nor a tool request for "+p.ToolRequest.Name, false, nil)
		}
	}
	opts := []ai.GenerateOption{ai.WithModelName(cp.Model), ai.WithMessages(cp.Messages...)}
	if len(cp.Tools) > 0 {
		refs := make([]ai.ToolRef, len(cp.Tools))
		for i, t := range cp.Tools {
			refs[i] = ai.ToolName(t)
		}
		opts = append(opts, ai.WithTools(refs...))
	}
	if cp.Config != nil {
		opts = append(opts, ai.WithConfig(cp.Config))
	}
	if cp.ToolChoice != "" {
		opts = append(opts, ai.WithToolChoice(cp.ToolChoice))
	}
	if len(respond) > 0 {
		opts = append(opts, ai.WithToolResponses(respond...))
	}
	if len(restart) > 0 {
		opts = append(opts, ai.WithToolRestarts(restart...))
	}
	return gk.Generate(ctx, g, opts...)
}

// resumePart is how the interrupted tool request p goes on.
func (rn *run) resumePart(p *ai.Part) (*ai.Part, error) {
	if rn.resume != nil {
		part, err := rn.resume(rn.asked, p, rn.answer)
		if err != nil {
			return nil, router.Fail(protocol.CodeValidation, "mapping the answer to "+rn.asked.ID+" for tool "+p.ToolRequest.Name+": "+err.Error(), false, nil)
		}
		if part == nil {
			return nil, router.Fail(protocol.CodeValidation, "Options.Resume gave no part for tool "+p.ToolRequest.Name, false, nil)
		}
		return part, nil
	}
	var v any
	if err := json.Unmarshal(rn.answer, &v); err != nil {
		return nil, router.Fail(protocol.CodeValidation, "the answer to "+rn.asked.ID+" is not JSON: "+err.Error(), false, nil)
	}
	// As ToolDef.RestartWith(p, WithResumedMetadata({"answer": v})).
	meta := maps.Clone(p.Metadata)
	if meta == nil {
		meta = map[string]any{}
	}
	delete(meta, "interrupt")
	meta["resumed"] = map[string]any{"answer": v}
	part := ai.NewToolRequestPart(&ai.ToolRequest{Name: p.ToolRequest.Name, Ref: p.ToolRequest.Ref, Input: p.ToolRequest.Input})
	part.Metadata = meta
	return part, nil
}

// ask keeps the interrupted response resp of Generate call i as a
// checkpoint and asks the task's question (router.Task.Ask).
func (rn *run) ask(ctx context.Context, i int, resp *ai.ModelResponse) error {
	interrupts := resp.Interrupts()
	q := questionOf(interrupts)
	d := q.Details
	rn.mu.Lock()
	model, lastInput := rn.lastModel, rn.lastInput
	done := make([]json.RawMessage, 0, len(rn.done))
	for _, r := range rn.done {
		b, err := json.Marshal(r)
		if err != nil {
			rn.mu.Unlock()
			return router.Fail(protocol.CodeInternal, "keeping a Generate response: "+err.Error(), false, nil)
		}
		done = append(done, b)
	}
	rn.mu.Unlock()
	req := resp.Request
	if req == nil && lastInput != "" {
		req = new(ai.ModelRequest)
		if json.Unmarshal([]byte(lastInput), req) != nil {
			req = nil
		}
	}
	if req == nil || model == "" || rn.store == nil {
		why := "Options.Store is not set: there is nowhere to keep the checkpoint"
		if rn.store != nil {
			why = "Genkit's spans of the model call were not recorded (is the OpenTelemetry sampler dropping them?)"
		}
		d["not_resumable"] = why
		return router.Fail(protocol.CodeInputRequired, q.Text, false, d)
	}
	cp := checkpoint{Index: i, Done: done, Model: model, Messages: append(append([]*ai.Message(nil), req.Messages...), resp.Message),
		Config: req.Config, ToolChoice: req.ToolChoice, Interrupts: interrupts}
	for _, t := range req.Tools {
		cp.Tools = append(cp.Tools, t.Name)
	}
	data, err := json.Marshal(cp)
	if err != nil {
		return router.Fail(protocol.CodeInternal, "keeping the checkpoint: "+err.Error(), false, nil)
	}
	ref, err := rn.t.PutArtifact(ctx, CheckpointMediaType, data)
	if err != nil {
		return err
	}
	d[detailCheckpointRef], d[detailGenerate] = ref, i
	_, err = rn.t.Ask(ctx, q)
	switch {
	case errors.Is(err, router.ErrWaiting):
		rn.mu.Lock()
		rn.waiting = true
		rn.mu.Unlock()
		return err // the task waits for the answer
	case errors.Is(err, router.ErrInvalidRequest):
		// A subtask cannot ask: it ends as one that needs input.
		d["not_asked"] = err.Error()
		return router.Fail(protocol.CodeInputRequired, q.Text, false, d)
	case err != nil:
		return err
	}
	return router.Fail(protocol.CodeInternal, "genkit: the router answered a question the flow has not been asked", false, d)
}

// loadCheckpoint finds the checkpoint a task that was asked and answered
// resumes from (router.Task.Resumed): none on a first attempt, or when the
// last answered question is not an interrupt of this bridge.
func (rn *run) loadCheckpoint(ctx context.Context) error {
	if rn.t.Attempt() == 1 {
		return nil // a first attempt has no answers
	}
	asked, answer, err := rn.t.Resumed(ctx)
	if err != nil || asked == nil {
		return err
	}
	ref, _ := asked.Details[detailCheckpointRef].(string)
	if ref == "" {
		return nil // a question of somebody else: start afresh
	}
	if rn.store == nil {
		return router.Fail(protocol.CodeContextUnavailable, "the checkpoint "+ref+" is in the artifact store, but Options.Store is not set", false, nil)
	}
	art, err := rn.store.GetArtifact(ctx, ref)
	if err != nil {
		return router.Fail(protocol.CodeContextUnavailable, "reading the checkpoint "+ref+": "+err.Error(), false, nil)
	}
	cp, err := decodeCheckpoint(art.Data)
	if err != nil {
		return router.Fail(protocol.CodeContextUnavailable, "the checkpoint "+ref+" does not decode: "+err.Error(), false, nil)
	}
	rn.checkpoint, rn.asked, rn.answer = cp, asked, answer
	return nil
}

// decodeCheckpoint decodes a checkpoint artifact and checks that it can
// be resumed from.
func decodeCheckpoint(data []byte) (*checkpoint, error) {
	cp := new(checkpoint)
	if err := json.Unmarshal(data, cp); err != nil {
		return nil, err
	}
	switch {
	case cp.Index < 0 || cp.Index > len(cp.Done):
		return nil, fmt.Errorf("call %d has %d responses before it", cp.Index, len(cp.Done))
	case cp.Model == "":
		return nil, errors.New("it names no model")
	case len(cp.Messages) == 0 || cp.Messages[len(cp.Messages)-1] == nil:
		return nil, errors.New("it has no conversation to go on with")
	case len(cp.Interrupts) == 0:
		return nil, errors.New("it has no interrupted tool request")
	}
	for i, p := range cp.Interrupts {
		if p == nil || !p.IsToolRequest() || p.ToolRequest == nil || p.ToolRequest.Name == "" {
			return nil, fmt.Errorf("interrupt %d is not a tool request", i)
		}
	}
	return cp, nil
}

// unasked is the task's error when tools interrupted the flow but no
// question was asked — the flow called genkit.Generate, not this
// package's Generate — else nil: the task needs input it cannot ask for.
// unaskedBecause says why.
func (rn *run) unasked() error {
	return rn.unaskedBecause("the flow called genkit.Generate: call the bridge's Generate to make an interrupt a question")
}

func (rn *run) unaskedBecause(why string) error {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if len(rn.interrupt) == 0 || rn.waiting {
		return nil
	}
	return router.Fail(protocol.CodeInputRequired, "tool "+strings.Join(rn.interrupt, ", ")+" paused for input", false, map[string]any{"not_resumable": why})
}

// questionOf makes the question of a generate loop's interrupted tool
// requests: its text is each interrupt's metadata (a string as it is; an
// object's "question", "message" or "text" member), one a line, else says
// which tools paused.
func questionOf(interrupts []*ai.Part) protocol.Question {
	var (
		texts, names []string
		list         []any
	)
	for _, p := range interrupts {
		meta := p.Metadata["interrupt"]
		names = append(names, p.ToolRequest.Name)
		list = append(list, map[string]any{"name": p.ToolRequest.Name, "ref": p.ToolRequest.Ref, "input": jsonValue(p.ToolRequest.Input), "interrupt": jsonValue(meta)})
		if s := infoText(meta); s != "" {
			texts = append(texts, s)
		}
	}
	text := strings.Join(texts, "\n")
	if text == "" {
		text = "The Genkit tool " + strings.Join(names, ", ") + " paused: answer to continue"
	}
	return protocol.Question{Text: bound.Clip(text, protocol.MaxQuestionText), Details: map[string]any{detailInterrupts: fitInterrupts(list)}}
}

// maxInterruptBytes bounds the interrupts a question's details carry; over
// it, each one keeps its name and ref only.
const maxInterruptBytes = 64 << 10

func fitInterrupts(list []any) []any {
	if b, _ := json.Marshal(list); len(b) <= maxInterruptBytes {
		return list
	}
	out := make([]any, len(list))
	for i, in := range list {
		m := in.(map[string]any)
		out[i] = map[string]any{"name": m["name"], "ref": m["ref"], "truncated": true}
	}
	return out
}

// infoText is the text of an interrupt's metadata, "" when it has none.
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
