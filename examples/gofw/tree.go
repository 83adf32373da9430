package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// node is a line of the printed tree and the lines under it. A task's
// line is made when the whole run has been read (task).
type node struct {
	line string
	task *taskView
	kids []*node
}

// taskView is what the tree shows of a task.
type taskView struct {
	req       *protocol.Message
	agent     string            // the routing decision's choice
	end       *protocol.Message // task.result, task.error, ...
	root      bool              // asked for from outside the run's tasks
	delegated bool              // asked for by its parent's own code, not a tool call
	tools     map[string]*node  // tool calls by call id
	open      []*node           // tool calls without an outcome yet, in order
	self      *node             // the task's own node
}

// counts are the run's totals, for the heading.
type counts struct {
	tasks, models, tools, tokens int
}

// printRun prints the run runID of st as a tree: each root task, and
// under it, in the order they happened, its model calls (with tokens),
// its tool calls (with what they returned) and its subtasks — under the
// tool call that made them, or as a delegation of the task itself — down
// to each task's result.
func printRun(ctx context.Context, w io.Writer, st store.Store, runID string) error {
	var roots []*node
	var n counts
	tasks := map[string]*taskView{}
	for ev, err := range st.Read(ctx, store.Query{RunID: runID}) {
		if err != nil {
			return err
		}
		m, err := ev.Message()
		if err != nil {
			return err
		}
		if m.Type == protocol.TypeTaskRequest {
			t := &taskView{req: m, tools: map[string]*node{}}
			t.self = &node{task: t}
			tasks[m.TaskID] = t
			n.tasks++
			parent := tasks[m.ParentTaskID]
			switch {
			case parent == nil:
				t.root = true
				roots = append(roots, t.self)
			case len(parent.open) > 0: // asked for by the tool call in flight
				call := parent.open[len(parent.open)-1]
				call.kids = append(call.kids, t.self)
			default: // delegated by the agent's own code
				t.delegated = true
				parent.self.kids = append(parent.self.kids, t.self)
			}
			continue
		}
		t := tasks[m.TaskID]
		if t == nil {
			continue // a task that began before the run's first event read here
		}
		switch m.Type {
		case protocol.TypeRoutingDecision:
			if d, err := protocol.DecodePayload[protocol.RoutingDecision](m); err == nil {
				t.agent = d.Selected
			}
		case router.TypeModelCall:
			mc, err := protocol.DecodePayload[router.ModelCall](m)
			if err != nil {
				return err
			}
			n.models++
			n.tokens += mc.TotalTokens
			t.self.kids = append(t.self.kids, &node{line: modelLine(mc)})
		case protocol.TypeToolCall:
			var p struct {
				Name string          `json:"name"`
				Args json.RawMessage `json:"args"`
			}
			_ = json.Unmarshal(m.Payload, &p)
			id, _ := protocol.ToolCallID(m)
			call := &node{line: "tool " + p.Name + " " + short(p.Args)}
			n.tools++
			t.tools[id] = call
			t.open = append(t.open, call)
			t.self.kids = append(t.self.kids, call)
		case protocol.TypeToolResult, protocol.TypeToolError:
			id, _ := protocol.ToolCallID(m)
			call := t.tools[id]
			if call == nil {
				continue
			}
			for i, c := range t.open {
				if c == call {
					t.open = append(t.open[:i], t.open[i+1:]...)
					break
				}
			}
			if m.Type == protocol.TypeToolError {
				call.kids = append(call.kids, &node{line: "fails: " + errorText(m)})
				continue
			}
			var p struct {
				Content json.RawMessage `json:"content"`
			}
			_ = json.Unmarshal(m.Payload, &p)
			call.kids = append(call.kids, &node{line: "returns " + short(p.Content)})
		default:
			if protocol.EndsTask(m) {
				t.end = m
			}
		}
	}
	fmt.Fprintf(w, "run %s: %s, %s (%d tokens), %s\n", runID, plural(n.tasks, "task"), plural(n.models, "model call"), n.tokens, plural(n.tools, "tool call"))
	for _, r := range roots {
		fmt.Fprintln(w)
		draw(w, r, "", "")
	}
	return nil
}

// draw prints n after lead (its connector), then its children under
// indent.
func draw(w io.Writer, n *node, lead, indent string) {
	line, kids := n.line, n.kids
	if n.task != nil {
		line = n.task.line()
		kids = append(kids[:len(kids):len(kids)], &node{line: n.task.outcome()})
	}
	fmt.Fprintf(w, "%s%s\n", lead, line)
	for i, k := range kids {
		if i == len(kids)-1 {
			draw(w, k, indent+"└─ ", indent+"   ")
		} else {
			draw(w, k, indent+"├─ ", indent+"│  ")
		}
	}
}

// line is the task's line: what it required, the agent that ran it and
// its input; a root task says who asked, a delegated one that it was.
func (t *taskView) line() string {
	var b strings.Builder
	if t.delegated {
		b.WriteString("delegates ")
	}
	b.WriteString("task")
	if len(t.req.Requires) > 0 {
		b.WriteString(" for " + strings.Join(t.req.Requires, ", "))
	}
	if t.root {
		b.WriteString(" from " + t.req.From.AgentID)
	}
	if t.agent != "" {
		b.WriteString(", run by " + t.agent)
	}
	b.WriteString(": " + short(t.req.Payload))
	return b.String()
}

// outcome is the last line under a task: its result, or how it ended.
func (t *taskView) outcome() string {
	switch {
	case t.end == nil:
		return "(still running)"
	case t.end.Type == protocol.TypeTaskResult:
		return "result " + short(t.end.Payload)
	case t.end.Type == protocol.TypeTaskError:
		return "error: " + errorText(t.end)
	default:
		return string(t.end.Type) + ": " + errorText(t.end)
	}
}

// modelLine is a model call's line: model, provider, tokens, and what
// the model asked for.
func modelLine(mc router.ModelCall) string {
	s := "model " + mc.Model
	if mc.Provider != "" {
		s += " (" + mc.Provider + ")"
	}
	s += ": " + plural(mc.InputTokens, "token") + fmt.Sprintf(" in, %d out", mc.OutputTokens)
	switch {
	case mc.Error != nil:
		s += "; failed: " + mc.Error.Message
	case mc.ToolCalls > 0:
		s += "; asks for " + plural(mc.ToolCalls, "tool call")
	case mc.FinishReason != "":
		s += "; " + mc.FinishReason
	}
	return s
}

// errorText is an error payload's code and message.
func errorText(m *protocol.Message) string {
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](m)
	if err != nil || ep.Code == "" {
		return short(m.Payload)
	}
	return string(ep.Code) + " " + ep.Message
}

// short is a payload on one line, cut at 100 characters.
func short(raw json.RawMessage) string {
	s := strings.Join(strings.Fields(string(raw)), " ")
	if r := []rune(s); len(r) > 100 {
		s = string(r[:99]) + "…"
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
