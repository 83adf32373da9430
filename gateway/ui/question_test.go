package ui

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// drafter asks which market, then asks a person to approve publishing its
// draft (the arguments a person may edit), then answers with both.
func drafter(ctx context.Context, t *router.Task) (*router.Result, error) {
	market, err := router.AskAs[string](ctx, t, protocol.Question{Text: "Which market should the draft cover?", Choices: []string{"fintech", "health"}})
	if err != nil {
		return nil, err
	}
	ok, err := router.AskAs[protocol.Approval](ctx, t, protocol.Question{Kind: protocol.QuestionApproval, Text: "Publish the draft?",
		Details: map[string]any{"action": "publish", "arguments": map[string]any{"title": "Draft on " + market}}})
	if err != nil {
		return nil, err
	}
	return &router.Result{Payload: map[string]any{"market": market, "decision": ok.Decision, "arguments": ok.Arguments}}, nil
}

// TestBrowserAnswersQuestions: a task asks in the thread; the page lists
// it under "Waiting for you", shows a card with the choices, and a click
// answers it; the approval that follows is edited in its card; the task
// runs on each time and its result appears. The answers are stored as
// from the signed-in caller. A question the key may not answer shows who
// it waits for, and no form.
func TestBrowserAnswersQuestions(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:drafter", Capabilities: []protocol.Capability{{ID: "skill:draft"}}}
	if err := h.r.Register(ctx, card, drafter); err != nil {
		t.Fatal(err)
	}
	req, err := h.r.NewRequest(testAgent, "", map[string]any{"text": "draft a market note"})
	if err != nil {
		t.Fatal(err)
	}
	req.ThreadID, req.RunID, req.Requires = h.thr, h.run, []string{"skill:draft"}
	hd, err := h.r.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := hd.Wait(ctx); out == nil || out.Question == nil {
		t.Fatalf("the task did not ask: %+v", out)
	}
	qid := protocol.QuestionID(req.TaskID, 0)

	h.signIn("#/thread/" + h.thr)
	h.waitJS(`document.getElementById("waiting").dataset.count === "1" && document.querySelector('#waiting li[data-question="` + qid + `"]')`)
	h.waitJS(`document.querySelector('.card.question[data-question="` + qid + `"][data-state="open"] .q-choice')`)
	if got := eval[[]string](h, `Array.from(document.querySelectorAll('.card.question[data-question="`+qid+`"] .q-choice')).map(b => b.textContent)`); len(got) != 2 || got[0] != "fintech" || got[1] != "health" {
		t.Fatalf("choices %v", got)
	}
	h.do(chromedp.Evaluate[chromedp.Void](`Array.from(document.querySelectorAll('.card.question[data-question="` + qid + `"] .q-choice')).find(b => b.textContent === "health").click()`))
	h.waitJS(`document.querySelector('.card.question[data-question="` + qid + `"][data-state="answered"]')`)

	// The approval: edit the arguments, then run with them.
	q1 := protocol.QuestionID(req.TaskID, 1)
	sel := `.card.question[data-question="` + q1 + `"]`
	h.waitJS(`document.querySelector('` + sel + `[data-state="open"] .q-do-edit')`)
	if *writeShots { // docs/ui-approval.png: the card as a person sees it
		h.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('` + sel + `').scrollIntoView({block: "center"})`))
		png, err := chromedp.Run(h.tab, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "ui-approval.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := eval[string](h, `document.querySelector('`+sel+` .q-edit').value`); !json.Valid([]byte(got)) || !jsonEqual(got, `{"title":"Draft on health"}`) {
		t.Fatalf("the edit box holds %q", got)
	}
	h.do(chromedp.Click(sel+` .q-do-edit`), chromedp.WaitVisible(sel+` .q-edit`),
		chromedp.SetValue(sel+` .q-edit`, `{"title": "Health rails, edited"}`),
		chromedp.Click(sel+` .q-do-edit`))
	h.waitJS(`document.querySelector('` + sel + `[data-state="answered"]') && document.querySelector('#events .ev[data-type="task.result"]')`)
	h.waitJS(`document.getElementById("waiting").dataset.count === "0"`)
	if txt := eval[string](h, `document.querySelector('#events .ev[data-type="task.result"]').textContent`); !strings.Contains(txt, "Health rails, edited") || !strings.Contains(txt, "edit") {
		t.Errorf("result card %q", txt)
	}
	var answers []*protocol.Message
	for ev, err := range h.st.Read(ctx, store.Query{TaskID: req.TaskID, TypePrefix: "task.answer"}) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ev.Message()
		answers = append(answers, m)
	}
	if len(answers) != 2 || answers[0].From.AgentID != testAgent || answers[1].From.AgentID != testAgent {
		t.Fatalf("answers %v", answers)
	}
	if !jsonEqual(string(answers[1].Payload), `{"question_id":"`+q1+`","value":{"decision":"edit","arguments":{"title":"Health rails, edited"}}}`) {
		t.Errorf("approval answer %s", answers[1].Payload)
	}

	// A question for someone else: a card without a form, and nothing
	// listed for this key.
	if err := h.r.Register(ctx, &protocol.AgentCard{V: protocol.Version, AgentID: "agent:asker", Capabilities: []protocol.Capability{{ID: "skill:ask"}}},
		func(ctx context.Context, t *router.Task) (*router.Result, error) {
			_, err := t.Ask(ctx, protocol.Question{Text: "Legal sign-off?", Who: &protocol.Answerers{Agents: []string{"agent:legal"}}})
			return nil, err
		}); err != nil {
		t.Fatal(err)
	}
	other, _ := h.r.NewRequest(testAgent, "", map[string]any{"text": "x"})
	other.ThreadID, other.RunID, other.Requires = h.thr, h.run, []string{"skill:ask"}
	if _, err := h.r.Submit(ctx, other); err != nil {
		t.Fatal(err)
	}
	q2 := protocol.QuestionID(other.TaskID, 0)
	h.waitJS(`document.querySelector('.card.question[data-question="` + q2 + `"][data-state="open"]')`)
	if txt := eval[string](h, `document.querySelector('.card.question[data-question="`+q2+`"]').textContent`); !strings.Contains(txt, "Waiting for legal") {
		t.Errorf("someone else's question: %q", txt)
	}
	if n := eval[int](h, `document.querySelectorAll('.card.question[data-question="`+q2+`"] form').length`); n != 0 {
		t.Errorf("a form on a question the key may not answer")
	}
	if c := eval[string](h, `document.getElementById("waiting").dataset.count`); c != "0" {
		t.Errorf("waiting for me: %s", c)
	}
	h.noCSPViolations()

	// agent:legal, a key without scopes, may answer it but not read the
	// thread: it signs in, its sidebar lists the question, whose own view
	// holds the card and its form.
	h.do(chromedp.Click("#signout"), chromedp.WaitVisible("#key"))
	h.signInWith(legalKey, "")
	h.waitJS(`document.getElementById("waiting").dataset.count === "1" && document.querySelector('#waiting li[data-question="` + q2 + `"] a')`)
	h.do(chromedp.Click(`#waiting li[data-question="` + q2 + `"] a`))
	h.waitJS(`location.hash === "#/question/` + q2 + `" && document.querySelector('.card.question[data-question="` + q2 + `"][data-state="open"] .q-input')`)
	h.do(chromedp.SendKeys(`.card.question[data-question="`+q2+`"] .q-input`, "signed off"),
		chromedp.Click(`.card.question[data-question="`+q2+`"] .q-submit`))
	h.waitJS(`document.querySelector('.card.question[data-question="` + q2 + `"][data-state="answered"]') && document.getElementById("waiting").dataset.count === "0"`)
	var legal *protocol.Message
	for ev, err := range h.st.Read(ctx, store.Query{TaskID: other.TaskID, TypePrefix: "task.answer"}) {
		if err != nil {
			t.Fatal(err)
		}
		legal, _ = ev.Message()
	}
	if legal == nil || legal.From.AgentID != "agent:legal" || !strings.Contains(string(legal.Payload), `"signed off"`) {
		t.Fatalf("legal's answer: %v", legal)
	}
	h.noCSPViolations()
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	ax, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return string(ax) == string(by)
}
