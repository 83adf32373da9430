package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
)

// The agents' handlers. Every step takes demo time (Team.d) on a timer
// tied to the task's context, so a cancel, a timeout or a shutdown ends
// a task at once.

// tagOf routes a track to its researcher: only that agent's card has the
// tag, so it scores highest among the skill:research candidates.
var tagOf = map[string]string{Ken: "tag:web", Ines: "tag:papers", Dara: "tag:data"}

// nameOf is how the lead speaks of its researchers.
var nameOf = map[string]string{Ken: "Ken", Ines: "Ines", Dara: "Dara"}

// paidQuery is what the lead asks the requester to approve (askPaid).
type paidQuery struct {
	Dataset string  `json:"dataset"`
	Query   string  `json:"query"`
	CostEUR float64 `json:"cost_eur"`
}

// planned is a track as the lead delegates it.
type planned struct {
	track
	context string
}

// lead asks the requester first when the ask says so, plans, delegates
// its tracks to the researchers at once and waits for all of them, then
// writes the brief and answers in the thread. A track that fails is left
// out with a caveat, unless the brief needs it: then the lead fails with
// the track's code.
func (t *Team) lead(ctx context.Context, task *router.Task) (*router.Result, error) {
	q, err := router.Input[schema.ResearchQuery](task)
	if err != nil {
		return nil, err
	}
	a := askFor(q.Query)
	title, base := "Brief: "+q.Query, "For a brief on: "+q.Query
	var (
		paid  *planned // the paid track as approved; nil when rejected
		notes []string // what the brief lacks, and why
	)
	// Questions come first: once the answer is in, the handler runs again
	// from the start (router.Task.Ask), so nothing may happen before them.
	switch a.question {
	case askRegion:
		region, err := router.AskAs[string](ctx, task, protocol.Question{
			Text: "Which region should the brief cover?", Choices: regions, Who: Answerers,
			Deadline: time.Now().Add(t.deadline),
		})
		if err != nil {
			return nil, err
		}
		base += " (region: " + region + ")"
		title += " (" + region + ")"
	case askPaid:
		var note string
		if paid, note, err = t.approvePaid(ctx, task, a); err != nil {
			return nil, err
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	plan := make([]planned, 0, len(a.tracks))
	for _, tr := range a.tracks {
		switch {
		case !tr.paid:
			plan = append(plan, planned{tr, base})
		case paid != nil:
			plan = append(plan, *paid)
		}
	}

	names := make([]string, len(plan))
	for i, p := range plan {
		names[i] = nameOf[p.agent]
	}
	if err := task.Progress(ctx, map[string]any{"step": "planning",
		"message": fmt.Sprintf("Splitting the question into %d research tracks", len(plan))}); err != nil {
		return nil, err
	}
	if err := pause(ctx, t.d(1.2*a.tempo)); err != nil {
		return nil, err
	}
	if err := task.Progress(ctx, map[string]any{"step": "delegating", "progress": 0, "total": len(plan),
		"message": "Asking " + list(names) + " in parallel"}); err != nil {
		return nil, err
	}
	outs := t.fanOut(ctx, task, plan)
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	var (
		brief schema.ResearchSummary
		used  []string // who the findings are from
	)
	for i, p := range plan {
		o := outs[i]
		var ep *protocol.ErrorPayload
		switch {
		case o.err == nil:
		case !errors.As(o.err, &ep):
			return nil, o.err // not the track's failure: ctx, the router
		case p.needed:
			msg := p.what + " are missing: " + ep.Message
			if err := t.say(ctx, task, "I could not finish the brief: "+msg+"."); err != nil {
				return nil, err
			}
			return nil, router.Fail(ep.Code, msg, false, map[string]any{"subtask": o.taskID})
		default:
			notes = append(notes, upper(p.what)+" could not be used ("+ep.Message+")")
			continue
		}
		s, err := router.ResultAs[schema.ResearchSummary](o.out)
		if err != nil {
			return nil, err
		}
		brief.Findings = append(brief.Findings, s.Findings...)
		brief.Citations = append(brief.Citations, s.Citations...)
		used = append(used, nameOf[p.agent])
	}
	if err := task.Progress(ctx, map[string]any{"step": "writing",
		"message": fmt.Sprintf("Writing the brief from %d of %d tracks", len(used), len(plan))}); err != nil {
		return nil, err
	}
	if err := pause(ctx, t.d(1.5*a.tempo)); err != nil {
		return nil, err
	}
	for _, n := range notes {
		brief.Findings = append(brief.Findings, "Caveat: "+n)
	}
	brief.Title = title
	text := fmt.Sprintf("Here is the brief on “%s”: %d findings from %s.", q.Query, len(brief.Findings)-len(notes), list(used))
	if len(notes) > 0 {
		text += " " + strings.Join(notes, "; ") + "."
	}
	if err := t.say(ctx, task, text); err != nil {
		return nil, err
	}
	return &router.Result{PayloadType: "research.summary.v1", Payload: brief}, nil
}

// approvePaid asks the requester to approve the paid track of a. It
// returns the track to run (nil when rejected) and a note for the brief.
func (t *Team) approvePaid(ctx context.Context, task *router.Task, a *ask) (*planned, string, error) {
	var paid *track
	for i := range a.tracks {
		if a.tracks[i].paid {
			paid = &a.tracks[i]
		}
	}
	if paid == nil {
		return nil, "", nil
	}
	args := paidQuery{Dataset: "claims-by-payer", Query: paid.query, CostEUR: 12}
	const what = "a paid market-data query (€12)"
	ans, err := router.AskAs[protocol.Approval](ctx, task, protocol.Question{
		Kind: protocol.QuestionApproval, Text: "Approve " + what + "?", Who: Answerers,
		Deadline: time.Now().Add(t.deadline),
		Details:  map[string]any{"action": what, "arguments": args},
	})
	if err != nil {
		return nil, "", err
	}
	switch ans.Decision {
	case protocol.Reject:
		note := upper(paid.what) + " was left out: the paid query was declined"
		if ans.Reason != "" {
			note += " (" + ans.Reason + ")"
		}
		return nil, note, nil
	case protocol.Edit:
		if err := json.Unmarshal(ans.Arguments, &args); err != nil || args.Dataset == "" {
			return nil, "", router.Fail(protocol.CodeInvalidField, "the edited query is not a market-data query ({dataset, query, cost_eur})", false, nil)
		}
	}
	p := &planned{*paid, fmt.Sprintf("Licensed dataset %s, approved at €%g", args.Dataset, args.CostEUR)}
	if args.Query != "" {
		p.query = args.Query
	}
	return p, "", nil
}

// delegated is how a track's subtask ended.
type delegated struct {
	taskID string
	out    *router.Outcome
	err    error
}

// fanOut delegates every track at once and waits for all; it reports
// each one's end as progress, in the order they end.
func (t *Team) fanOut(ctx context.Context, task *router.Task, plan []planned) []delegated {
	outs := make([]delegated, len(plan))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
	)
	for i, p := range plan {
		wg.Go(func() {
			sub, err := task.NewSubtask("research.query.v1", schema.ResearchQuery{Query: p.query, Context: p.context, MaxSources: 5})
			if err != nil {
				outs[i].err = err
				return
			}
			sub.Requires = []string{"skill:research"}
			sub.Prefers = []string{tagOf[p.agent]}
			outs[i].taskID = sub.TaskID
			outs[i].out, outs[i].err = task.Delegate(ctx, sub)
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			done++
			msg := nameOf[p.agent] + " is done"
			if outs[i].err != nil {
				msg = nameOf[p.agent] + " could not finish " + p.what
			}
			// A progress that cannot be stored is no reason to stop: the
			// next step of the lead meets the same failure and returns it.
			_ = task.Progress(ctx, map[string]any{"step": "collecting", "progress": done, "total": len(plan),
				"message": fmt.Sprintf("%s (%d of %d)", msg, done, len(plan))})
		})
	}
	wg.Wait()
	return outs
}

// say answers the requester in the run's thread.
func (t *Team) say(ctx context.Context, task *router.Task, text string) error {
	_, err := task.Emit(ctx, protocol.TypeChatMessage, "", map[string]any{"text": text})
	return err
}

// researcher calls its (fake) tool, with progress while it reads, and
// summarises what it found. The tool fails as the script says: a
// retryable fault on the first attempt only, so the router's retry
// succeeds; any other fault on every attempt.
func (t *Team) researcher(tool, name string) router.Handler {
	return func(ctx context.Context, task *router.Task) (*router.Result, error) {
		q, err := router.Input[schema.ResearchQuery](task)
		if err != nil {
			return nil, err
		}
		tr, tempo := trackOf(q.Query)
		f := faults[q.Query]
		if task.Attempt() > 1 {
			if f != nil && f.retryable {
				f = nil
			}
			if err := task.Progress(ctx, map[string]any{"step": "retrying",
				"message": fmt.Sprintf("Attempt %d: trying %s again", task.Attempt(), tool)}); err != nil {
				return nil, err
			}
			if err := pause(ctx, t.d(1)); err != nil {
				return nil, err
			}
		}
		call, err := task.Emit(ctx, protocol.TypeToolCall, "", map[string]any{"tool": tool, "name": name,
			"args": map[string]any{"query": q.Query, "max_results": q.MaxSources}})
		if err != nil {
			return nil, err
		}
		const pages = 3
		for k := 1; k <= pages; k++ {
			if err := pause(ctx, t.d(0.6*tempo)); err != nil {
				return nil, err
			}
			if f != nil && k == 2 {
				details := map[string]any{"tool": tool, "name": name, "call_id": call.ID}
				if _, err := task.Emit(ctx, protocol.TypeToolError, "", &protocol.ErrorPayload{
					Code: f.code, Message: f.message, Retryable: f.retryable, Details: details}); err != nil {
					return nil, err
				}
				return nil, router.Fail(f.code, f.message, f.retryable, details)
			}
			if err := task.Progress(ctx, map[string]any{"tool": tool, "name": name, "call_id": call.ID, "progress": k, "total": pages,
				"message": fmt.Sprintf("Read %d of %d result pages", k, pages)}); err != nil {
				return nil, err
			}
		}
		hits := sources(tool, q.Query)
		var text strings.Builder
		for _, h := range hits {
			fmt.Fprintf(&text, "%s — %s\n", h["title"], h["url"])
		}
		if _, err := task.Emit(ctx, protocol.TypeToolResult, "", map[string]any{"tool": tool, "name": name, "call_id": call.ID,
			"content":           []map[string]string{{"type": "text", "text": text.String()}},
			"structuredContent": map[string]any{"results": hits}}); err != nil {
			return nil, err
		}
		if err := task.Progress(ctx, map[string]any{"step": "summarising",
			"message": fmt.Sprintf("Summarising %d sources", len(hits))}); err != nil {
			return nil, err
		}
		if err := pause(ctx, t.d(0.8*tempo)); err != nil {
			return nil, err
		}
		s := schema.ResearchSummary{Title: "Findings: " + q.Query}
		if tr != nil {
			s.Findings = tr.findings
		}
		if len(s.Findings) == 0 {
			s.Findings = []string{"The sources found agree on the main trend"}
		}
		for _, h := range hits {
			s.Citations = append(s.Citations, h["url"])
		}
		return &router.Result{PayloadType: "research.summary.v1", Payload: s}, nil
	}
}

// trackOf returns the scripted track of a subtask's query and its ask's
// tempo; nil and 1 for a query the script does not know.
func trackOf(query string) (*track, float64) {
	for i := range asks {
		for j := range asks[i].tracks {
			if asks[i].tracks[j].query == query {
				return &asks[i].tracks[j], asks[i].tempo
			}
		}
	}
	return nil, 1
}

// sources are a fake tool's hits for query.
func sources(tool, query string) []map[string]string {
	host := map[string]string{"mcp:browser": "news.example.com", "mcp:papers": "papers.example.org", "mcp:market-data": "data.example.com"}[tool]
	s := slug(query)
	return []map[string]string{
		{"title": "Overview: " + query, "url": "https://" + host + "/" + s},
		{"title": "Figures and sources", "url": "https://" + host + "/" + s + "/figures"},
		{"title": "Recent changes", "url": "https://" + host + "/" + s + "/updates"},
	}
}

// list joins names as a person would: "Ken, Ines and Dara".
func list(names []string) string {
	switch len(names) {
	case 0:
		return "nobody"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// upper capitalises s's first letter.
func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func slug(s string) string {
	b := make([]byte, 0, len(s))
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b = append(b, c)
		case c >= 'A' && c <= 'Z':
			b = append(b, c+'a'-'A')
		case len(b) > 0 && b[len(b)-1] != '-':
			b = append(b, '-')
		}
	}
	return strings.TrimSuffix(string(b), "-")
}
