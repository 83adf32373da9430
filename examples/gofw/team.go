package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	clutcheino "github.com/clutchprotocol/clutch/adapters/eino"
	clutchgenkit "github.com/clutchprotocol/clutch/adapters/genkit"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// The team's capabilities, and who has them.
const (
	capWrite    = "skill:write"    // agent:writer, a Genkit flow
	capResearch = "skill:research" // agent:researcher, an eino graph
	capFacts    = "skill:facts"    // agent:archive, plain Go
	capDigest   = "skill:digest"   // agent:archive, which has the writer write up its facts
)

// archiveFacts is what the archive knows.
var archiveFacts = map[string]string{
	"Bergen": "Bergen lies between seven mountains; it rains most days.",
	"Oslo":   "Oslo is Norway's capital, on the Oslofjord.",
}

// Brief is what the writer is asked for: a note on Subject, from Facts
// when the caller has them (else the writer has them researched).
type Brief struct {
	Subject string `json:"subject"`
	Facts   string `json:"facts,omitempty"`
}

// team registers the three agents on r; g is the Genkit instance of the
// writer's flow.
func team(ctx context.Context, r *router.Router, g *genkit.Genkit) error {
	if err := registerArchive(ctx, r); err != nil {
		return err
	}
	if err := registerResearcher(ctx, r); err != nil {
		return err
	}
	return registerWriter(ctx, r, g)
}

// registerArchive registers the plain Go agent: a handler func. Asked for
// a city's facts (skill:facts), it answers them; asked for a digest
// (skill:digest), it delegates the writing to the team's writer with
// Task.Delegate, the facts in hand.
func registerArchive(ctx context.Context, r *router.Router) error {
	card := &protocol.AgentCard{
		AgentID:      "agent:archive",
		Display:      &protocol.Display{Name: "Archive", Desc: "Plain Go: knows facts about cities, and has them written up"},
		Capabilities: []protocol.Capability{{ID: capFacts}, {ID: capDigest}},
	}
	return r.Register(ctx, card, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		city, err := router.Input[string](t)
		if err != nil {
			return nil, err
		}
		facts, ok := archiveFacts[city]
		if !ok {
			return nil, router.Fail(protocol.CodeNotFound, "the archive has nothing on "+city, false, nil)
		}
		if !slices.Contains(t.Request().Requires, capDigest) {
			return &router.Result{Payload: facts}, nil
		}
		sub, err := t.NewSubtask("", Brief{Subject: city, Facts: facts})
		if err != nil {
			return nil, err
		}
		sub.Requires = []string{capWrite}
		out, err := t.Delegate(ctx, sub)
		if err != nil {
			return nil, err
		}
		note, err := router.ResultAs[string](out)
		if err != nil {
			return nil, err
		}
		return &router.Result{Payload: note}, nil
	})
}

// registerResearcher registers the eino agent: eino's ReAct tool loop over
// a fake model, whose one tool is the team's skill:facts (the archive)
// through adapters/eino's Tool.
func registerResearcher(ctx context.Context, r *router.Router) error {
	archive, err := clutcheino.Tool(r, capFacts, &clutcheino.ToolOptions{Name: "archive", Description: "Look a city up in the team's archive."})
	if err != nil {
		return err
	}
	ag, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: researcherModel{},
		ToolsConfig:      compose.ToolsNodeConfig{Tools: []tool.BaseTool{archive}},
		MaxStep:          6,
	})
	if err != nil {
		return err
	}
	graph, opts := ag.ExportGraph()
	loop, err := compose.NewChain[[]*schema.Message, *schema.Message]().AppendGraph(graph, opts...).Compile(ctx)
	if err != nil {
		return err
	}
	a, err := clutcheino.New("agent:researcher", loop, &clutcheino.Options{
		Name:         "Researcher",
		Description:  "An eino ReAct graph: researches a city with the team's archive",
		Capabilities: []string{capResearch},
		Tools:        []tool.BaseTool{archive},
		Model:        "researcher",
	})
	if err != nil {
		return err
	}
	return r.Register(ctx, a.Card(), a.Handle)
}

// researcherModel is the researcher's deterministic model, an eino
// model.ToolCallingChatModel: it looks the city up in the archive, then
// answers with what the archive said. Tokens are counted as words.
type researcherModel struct{}

func (researcherModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	last := in[len(in)-1]
	var out *schema.Message
	if last.Role == schema.Tool {
		out = schema.AssistantMessage(strings.TrimSuffix(last.Content, ".")+" (the archive).", nil)
		out.ResponseMeta = &schema.ResponseMeta{FinishReason: "stop"}
	} else {
		args, _ := json.Marshal(map[string]string{"input": last.Content})
		out = schema.AssistantMessage("", []schema.ToolCall{{ID: "call_1", Type: "function", Function: schema.FunctionCall{Name: "archive", Arguments: string(args)}}})
		out.ResponseMeta = &schema.ResponseMeta{FinishReason: "tool_calls"}
	}
	prompt, reply := 0, words(out.Content)
	for _, m := range in {
		prompt += words(m.Content)
	}
	for _, c := range out.ToolCalls {
		reply += words(c.Function.Arguments)
	}
	out.ResponseMeta.Usage = &schema.TokenUsage{PromptTokens: prompt, CompletionTokens: reply, TotalTokens: prompt + reply}
	return out, nil
}

func (m researcherModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	out, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{out}), nil
}

func (m researcherModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return m, nil
}

func (researcherModel) GetType() string { return "Fake" }

// registerWriter registers the Genkit agent: a flow whose model (a fake,
// genkit.DefineModel) writes a note, and whose one tool is the team's
// skill:research (the researcher) through adapters/genkit's Tool.
func registerWriter(ctx context.Context, r *router.Router, g *genkit.Genkit) error {
	research, err := clutchgenkit.Tool(r, capResearch, &clutchgenkit.ToolOptions{Name: "research", Description: "Have the team's researcher find facts about a city."})
	if err != nil {
		return err
	}
	writer := genkit.DefineModel(g, "fake/writer", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}}, writerModel)
	flow := genkit.DefineFlow(g, "writer", func(ctx context.Context, in Brief) (string, error) {
		prompt := "Write a note on " + in.Subject + "."
		if in.Facts != "" {
			prompt += "\nFacts: " + in.Facts
		}
		resp, err := clutchgenkit.Generate(ctx, g, ai.WithModel(writer), ai.WithPrompt(prompt), ai.WithTools(research))
		if err != nil {
			return "", err
		}
		return resp.Text(), nil
	})
	a, err := clutchgenkit.New("agent:writer", flow, &clutchgenkit.Options{
		Name:         "Writer",
		Description:  "A Genkit flow: writes a note on a city, researched by the team when it has no facts",
		Capabilities: []string{capWrite},
		Tools:        []ai.Tool{research},
		Store:        r.Store(),
	})
	if err != nil {
		return err
	}
	return r.Register(ctx, a.Card(), a.Handle)
}

// writerModel is the writer's deterministic model: given facts (in the
// prompt, or from the research tool) it writes the note; else it asks for
// research on the prompt's subject. Tokens are counted as words.
func writerModel(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
	prompt := req.Messages[0].Text()
	first, facts, _ := strings.Cut(prompt, "\nFacts: ")
	subject := strings.TrimSuffix(strings.TrimPrefix(first, "Write a note on "), ".")
	if last := req.Messages[len(req.Messages)-1]; last.Role == ai.RoleTool && last.Content[0].IsToolResponse() {
		facts = fmt.Sprint(last.Content[0].ToolResponse.Output)
	}
	var msg *ai.Message
	if facts != "" {
		msg = ai.NewModelTextMessage("A note on " + subject + ": " + facts)
	} else {
		msg = &ai.Message{Role: ai.RoleModel, Content: []*ai.Part{ai.NewToolRequestPart(&ai.ToolRequest{Name: "research", Ref: "call_1", Input: map[string]any{"input": subject}})}}
	}
	in, out := 0, partWords(msg.Content)
	for _, m := range req.Messages {
		in += partWords(m.Content)
	}
	return &ai.ModelResponse{Request: req, Message: msg, FinishReason: ai.FinishReasonStop,
		Usage: &ai.GenerationUsage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}}, nil
}

// partWords counts the words of a message's parts: text, and tool
// requests and responses as their JSON.
func partWords(parts []*ai.Part) int {
	n := 0
	for _, p := range parts {
		switch {
		case p.IsToolRequest():
			b, _ := json.Marshal(p.ToolRequest.Input)
			n += words(string(b))
		case p.IsToolResponse():
			b, _ := json.Marshal(p.ToolResponse.Output)
			n += words(string(b))
		default:
			n += words(p.Text)
		}
	}
	return n
}

func words(s string) int { return len(strings.Fields(s)) }
