package rules

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	codingMD = "# Coding\n\n## Steps\n\n1. Inspect the diff.\n2. Suggest a commit message.\n\n## Tone\n\nBe brief.\n"
	setupMD  = "# Setup\n\n## Install\n\n- run make deps\n"
	reviewMD = "# Review\n\n## Checks\n\n- tests pass\n- docs updated\n"
)

func newLib(t *testing.T) (*Library, store.Store, *schema.Registry) {
	t.Helper()
	st, err := memstore.New(nil)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	reg, err := schema.New(nil)
	require.NoError(t, err)
	l, err := Open(context.Background(), st, &Options{Workspace: "team", Schemas: reg})
	require.NoError(t, err)
	return l, st, reg
}

func seed(t *testing.T, l *Library) (workflow, rule, ctxDoc Document) {
	t.Helper()
	ctx := context.Background()
	var err error
	workflow, err = l.Publish(ctx, "agent:lead", Publish{Path: "workflow/CODING.md", Content: codingMD, Description: "how we code"})
	require.NoError(t, err)
	rule, err = l.Publish(ctx, "agent:lead", Publish{Path: "rules/REVIEW.md", Content: reviewMD})
	require.NoError(t, err)
	ctxDoc, err = l.Publish(ctx, "agent:lead", Publish{Path: "context/SETUP.md", Content: setupMD})
	require.NoError(t, err)
	return
}

func TestPublishDerivesDocument(t *testing.T) {
	l, _, _ := newLib(t)
	w, r, c := seed(t, l)
	assert.Equal(t, KindWorkflow, w.Kind)
	assert.Equal(t, "CODING", w.Name)
	assert.Equal(t, "workflow", w.Group)
	assert.Equal(t, HashContent([]byte(codingMD)), w.Hash)
	assert.Equal(t, "artifact:"+w.Hash, w.Content, "content lives in the artifact store under its hash")
	assert.Equal(t, KindRule, r.Kind)
	assert.Equal(t, KindContext, c.Kind)
	assert.Equal(t, 1, w.Version)
	assert.Regexp(t, `^ws-[0-9a-f]{32}$`, l.WorkspaceID())

	again, err := l.Publish(context.Background(), "agent:lead", Publish{Path: "workflow/CODING.md", Content: codingMD, Description: "how we code"})
	require.NoError(t, err)
	assert.Equal(t, w, again, "publishing the same content stores nothing")
	v2, err := l.Publish(context.Background(), "agent:lead", Publish{Path: "workflow/CODING.md", Content: codingMD + "\n## More\n"})
	require.NoError(t, err)
	assert.Equal(t, w.ID, v2.ID)
	assert.Equal(t, 2, v2.Version)

	_, err = l.Publish(context.Background(), "agent:lead", Publish{Path: "../x.md", Content: "x"})
	assert.ErrorIs(t, err, ErrUnsafePath)
}

func TestSessionCycle(t *testing.T) {
	ctx := context.Background()
	l, st, reg := newLib(t)
	w, r, c := seed(t, l)
	s, err := l.Session(ctx, "agent:host", "host-session-1")
	require.NoError(t, err)

	_, err = s.Setup(ctx, map[string]string{})
	require.ErrorIs(t, err, ErrInvalidParams)
	assert.Contains(t, err.Error(), "invalid params")
	setup, err := s.Setup(ctx, map[string]string{MPFID: ""})
	require.NoError(t, err)
	assert.Equal(t, DefaultMetaPrompt, setup.MPF.Content)
	assert.True(t, setup.MPF.Changed)
	again, err := s.Setup(ctx, map[string]string{MPFID: setup.MPF.Hash})
	require.NoError(t, err)
	assert.False(t, again.MPF.Changed)
	assert.Empty(t, again.MPF.Content)
	assert.Equal(t, "host-session-1", again.SessionID)

	items, err := s.Discover(ctx, Filter{})
	require.NoError(t, err)
	require.Len(t, items, 3)
	assert.Equal(t, []string{c.ID, r.ID, w.ID}, []string{items[0].ID, items[1].ID, items[2].ID}, "sorted by path")
	items, err = s.Discover(ctx, Filter{Kind: "workflow"})
	require.NoError(t, err)
	require.Len(t, items, 1)
	items, err = s.Discover(ctx, Filter{Query: "HOW code"})
	require.NoError(t, err)
	require.Len(t, items, 1, "every word, any case, description included")
	items, err = s.Discover(ctx, Filter{Group: "rules"})
	require.NoError(t, err)
	require.Len(t, items, 1)
	_, err = s.Discover(ctx, Filter{Kind: "mpf"})
	require.ErrorIs(t, err, ErrInvalidParams)

	_, err = s.Load(ctx, []string{w.ID}, nil)
	require.ErrorIs(t, err, ErrInvalidParams)
	_, err = s.Load(ctx, []string{w.ID, c.ID}, map[string]string{w.ID: ""})
	require.ErrorIs(t, err, ErrInvalidParams)
	_, err = s.Load(ctx, []string{"doc_nope"}, map[string]string{"doc_nope": ""})
	require.ErrorIs(t, err, ErrUnknownID)
	assert.Contains(t, err.Error(), "Unknown rule id")

	loaded, err := s.Load(ctx, []string{w.ID, c.ID}, map[string]string{w.ID: "", c.ID: ""})
	require.NoError(t, err)
	require.Len(t, loaded, 2)
	assert.True(t, loaded[0].Changed)
	assert.Equal(t, codingMD+ReferReminder(w.ID), *loaded[0].Content, "rules and workflows get the refer reminder")
	assert.Equal(t, setupMD, *loaded[1].Content, "context does not")
	assert.Equal(t, []string{"Steps", "Steps/1", "Steps/2", "Tone"}, ids(loaded[0].Constraints))
	assert.Empty(t, loaded[1].Constraints)

	delta, err := s.Load(ctx, []string{w.ID}, map[string]string{w.ID: w.Hash})
	require.NoError(t, err)
	assert.False(t, delta[0].Changed)
	assert.Nil(t, delta[0].Content)
	assert.Equal(t, loaded[0].Constraints, delta[0].Constraints, "constraints still returned")

	n, err := s.Refer(ctx, []Ref{{RuleID: w.ID, ConstraintID: "Steps/1", Reason: "inspected"}, {RuleID: r.ID, ConstraintID: "Checks"}})
	require.NoError(t, err)
	assert.Equal(t, 2, n)

	_, err = s.Refer(ctx, []Ref{{RuleID: w.ID, ConstraintID: "Step"}})
	var re *ReferError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, CodeUnknownConstraint, re.Code)
	assert.Equal(t, ActionRetryConstraint, re.RetryAction)
	assert.Equal(t, "memref constraintId 'Step' is not valid for ruleId '"+w.ID+"'; retry with one of: Steps, Steps/1, Steps/2, Tone", re.Message)
	assert.Equal(t, ValidConstraint{ID: "Steps/1", Name: "Steps", Text: "Inspect the diff."}, re.ValidConstraints[1])
	assert.ErrorIs(t, err, ErrUnknownConstraint)

	for _, id := range []string{"doc_gone", c.ID, MPFID} {
		_, err = s.Refer(ctx, []Ref{{RuleID: id, ConstraintID: "Steps"}})
		require.ErrorAs(t, err, &re, id)
		assert.Equal(t, CodeUnknownRuleOrWorkflow, re.Code)
		assert.Equal(t, ActionRediscover, re.RetryAction)
	}
	_, err = s.Refer(ctx, nil)
	require.ErrorIs(t, err, ErrInvalidParams)

	require.ErrorIs(t, s.Report(ctx, "  "), ErrInvalidParams)
	require.NoError(t, s.Report(ctx, "committed"))
	require.NoError(t, s.Reject(ctx, ""))

	// The attestation trail, in the session's own run.
	ref := s.Ref()
	var types []protocol.Type
	for ev, err := range st.Read(ctx, store.Query{RunID: ref.RunID}) {
		require.NoError(t, err)
		m, err := ev.Message()
		require.NoError(t, err)
		assert.Equal(t, "agent:host", m.From.AgentID)
		assert.Equal(t, ref.TaskID, m.TaskID)
		require.NoError(t, reg.ValidateMessage(m), "payloads meet their registered schemas")
		types = append(types, m.Type)
	}
	assert.Equal(t, []protocol.Type{TypeSetup, TypeSetup, TypeDiscover, TypeDiscover, TypeDiscover, TypeDiscover, TypeLoad, TypeLoad, TypeRefer, TypeReport, TypeReject}, types)
}

func TestSessionBindsToTask(t *testing.T) {
	ctx := context.Background()
	l, st, _ := newLib(t)
	req := protocol.NewMessage(protocol.TypeTaskRequest, "agent:host")
	req.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
	_, err := st.Append(ctx, req)
	require.NoError(t, err)
	s, err := l.Session(ctx, "agent:host", req.TaskID)
	require.NoError(t, err)
	assert.Equal(t, SessionRef{SessionID: req.TaskID, RunID: req.RunID, ThreadID: req.ThreadID, TaskID: req.TaskID}, s.Ref())
	stranger, err := l.Session(ctx, "agent:stranger", req.TaskID)
	require.NoError(t, err)
	assert.NotEqual(t, req.RunID, stranger.Ref().RunID, "a stranger's session is its own run")
	_, err = l.Session(ctx, "agent:host", "bad\nid")
	assert.ErrorIs(t, err, ErrInvalidParams)
}

func cmd(t *testing.T, s string) Command {
	t.Helper()
	c, err := DecodeCommand([]byte(s))
	require.NoError(t, err)
	return c
}

func TestArtifactDrafts(t *testing.T) {
	ctx := context.Background()
	l, st, reg := newLib(t)
	w, r, c := seed(t, l)
	s, err := l.Session(ctx, "agent:host", "s1")
	require.NoError(t, err)
	other, err := l.Session(ctx, "agent:other", "s2")
	require.NoError(t, err)

	// create
	res, err := s.Artifact(ctx, cmd(t, `{"resource":"context","op":{"create":{"path":"spec/new-context.md","body":"# New\n","description":"notes"}}}`))
	require.NoError(t, err)
	assert.Equal(t, "spec/new-context.md", res.DraftPath)
	tmp := res.ID
	assert.Regexp(t, `^tmp-[0-9a-f]{24}$`, tmp)
	_, err = s.Artifact(ctx, cmd(t, `{"resource":"context","op":{"create":{"path":"spec/new-context.md","body":"again"}}}`))
	assert.ErrorIs(t, err, ErrDraftExists)
	assert.Contains(t, err.Error(), "draft already exists")
	_, err = s.Artifact(ctx, cmd(t, `{"resource":"context","op":{"create":{"path":"context/SETUP.md","body":"x"}}}`))
	assert.ErrorIs(t, err, ErrPathTaken)
	for _, p := range []string{"../escape.md", "/abs.md", "a/../b.md", "a\\b.md", "x.txt", ".hidden/x.md", "a//b.md", "META_PROMPT.md"} {
		_, err = s.Artifact(ctx, Command{Resource: "context", Op: "create", Path: p, Body: "x"})
		assert.ErrorIs(t, err, ErrUnsafePath, p)
		assert.Contains(t, err.Error(), "unsafe path", p)
	}

	// the tmp id is public: discover and load it; other agents see nothing
	items, err := s.Discover(ctx, Filter{Group: "spec"})
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Equal(t, tmp, items[0].ID)
	assert.True(t, items[0].HasDraft)
	items, err = other.Discover(ctx, Filter{Group: "spec"})
	require.NoError(t, err)
	assert.Empty(t, items)
	ld, err := s.Load(ctx, []string{tmp}, map[string]string{tmp: ""})
	require.NoError(t, err)
	assert.Equal(t, "# New\n", *ld[0].Content)

	// update, replacing its own update draft; base hash kept
	_, err = s.Artifact(ctx, Command{Resource: "rule", Op: "update", ID: w.ID, Body: codingMD + "\n## Extra\n\nMore.\n"})
	require.NoError(t, err)
	_, err = s.Artifact(ctx, Command{Resource: "rule", Op: "update", ID: w.ID, Body: codingMD + "\n## Extra\n\nEven more.\n"})
	require.NoError(t, err)
	ld, err = s.Load(ctx, []string{w.ID}, map[string]string{w.ID: w.Hash})
	require.NoError(t, err)
	assert.True(t, ld[0].Changed)
	assert.True(t, ld[0].HasDraft)
	assert.Equal(t, w.Hash, ld[0].DraftBaseHash)
	assert.Equal(t, "Even more.", ld[0].Constraints[len(ld[0].Constraints)-1].Text)
	ld, err = other.Load(ctx, []string{w.ID}, map[string]string{w.ID: w.Hash})
	require.NoError(t, err)
	assert.False(t, ld[0].Changed, "another agent still sees the published version")

	// conflicts
	_, err = s.Artifact(ctx, Command{Resource: "rule", Op: "rename", ID: w.ID, NewPath: "workflow/C2.md"})
	assert.ErrorIs(t, err, ErrIncompatibleDraft)
	_, err = s.Artifact(ctx, Command{Resource: "rule", Op: "delete", ID: w.ID})
	assert.ErrorIs(t, err, ErrIncompatibleDraft)
	_, err = s.Artifact(ctx, Command{Resource: "context", Op: "update", ID: tmp, Body: "x"})
	assert.ErrorIs(t, err, ErrIncompatibleDraft, "a create draft is not an update")
	_, err = s.Artifact(ctx, Command{Resource: "context", Op: "update", ID: w.ID, Body: "x"})
	assert.ErrorIs(t, err, ErrNotFound, "a rule is not a context document")
	assert.Contains(t, err.Error(), "file not found in cache")
	_, err = s.Artifact(ctx, Command{Resource: "rule", Op: "update", ID: "doc_missing", Body: "x"})
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.Artifact(ctx, Command{Resource: "context", Op: "delete", ID: "spec/new-context.md"})
	assert.ErrorIs(t, err, ErrNotFound, "a draft path is not an id")
	_, err = s.Artifact(ctx, Command{Resource: "mpf", Op: "rename", ID: MPFID, NewPath: "x.md"})
	assert.ErrorIs(t, err, ErrInvalidCommand)

	// rename and delete drafts
	_, err = s.Artifact(ctx, Command{Resource: "rule", Op: "rename", ID: r.ID, NewPath: "rules/REVIEWING.md"})
	require.NoError(t, err)
	_, err = s.Artifact(ctx, Command{Resource: "context", Op: "create", Path: "rules/REVIEWING.md", Body: "x"})
	assert.ErrorIs(t, err, ErrDraftExists, "a rename target is taken by the draft")
	_, err = s.Artifact(ctx, Command{Resource: "context", Op: "delete", ID: c.ID})
	require.NoError(t, err)
	_, err = s.Artifact(ctx, Command{Resource: "mpf", Op: "update", ID: MPFID, Body: "# Our prompt\n"})
	require.NoError(t, err)

	// delete of a create-only draft discards it; discard drops a draft
	res, err = s.Artifact(ctx, Command{Resource: "context", Op: "delete", ID: tmp})
	require.NoError(t, err)
	assert.True(t, res.Discarded)
	_, err = s.Artifact(ctx, Command{Resource: "context", Op: "discard", ID: tmp})
	assert.ErrorIs(t, err, ErrNoDraft)

	// review
	drafts := l.Drafts()
	require.Len(t, drafts, 4)
	for _, d := range drafts {
		assert.Equal(t, "agent:host", d.Author)
	}
	_, err = l.Approve(ctx, "agent:lead", "agent:host", "doc_missing")
	assert.ErrorIs(t, err, ErrNoDraft)
	doc, err := l.Approve(ctx, "agent:lead", "agent:host", w.ID)
	require.NoError(t, err)
	assert.Equal(t, 2, doc.Version)
	assert.Equal(t, HashContent([]byte(codingMD+"\n## Extra\n\nEven more.\n")), doc.Hash)
	assert.Equal(t, "how we code", doc.Description, "an update keeps the document's description")
	doc, err = l.Approve(ctx, "agent:lead", "agent:host", r.ID)
	require.NoError(t, err)
	assert.Equal(t, "rules/REVIEWING.md", doc.Path)
	assert.Equal(t, "REVIEWING", doc.Name)
	_, err = l.Approve(ctx, "agent:lead", "agent:host", c.ID)
	require.NoError(t, err)
	_, ok := l.Document(c.ID)
	assert.False(t, ok, "deleted")
	require.NoError(t, l.RejectDraft(ctx, "agent:lead", "agent:host", MPFID, "keep the default"))
	assert.Empty(t, l.Drafts())
	content, _, err := l.Content(ctx, MPFID)
	require.NoError(t, err)
	assert.Equal(t, DefaultMetaPrompt, content)

	// approving a draft whose base changed is a conflict
	_, err = s.Artifact(ctx, Command{Resource: "rule", Op: "update", ID: w.ID, Body: "# stale\n"})
	require.NoError(t, err)
	_, err = l.Publish(ctx, "agent:lead", Publish{ID: w.ID, Path: "workflow/CODING.md", Content: "# moved on\n"})
	require.NoError(t, err)
	_, err = l.Approve(ctx, "agent:lead", "agent:host", w.ID)
	assert.ErrorIs(t, err, ErrConflict)
	assert.Len(t, l.Drafts(), 1, "the draft stays")

	// Every library event meets its registered schema.
	runID, _, _ := l.Run()
	seen := map[protocol.Type]bool{}
	for ev, err := range st.Read(ctx, store.Query{RunID: runID}) {
		require.NoError(t, err)
		m, err := ev.Message()
		require.NoError(t, err)
		require.NoError(t, reg.ValidateMessage(m), "%s %s", m.Type, m.Payload)
		seen[m.Type] = true
	}
	for _, typ := range []protocol.Type{TypePublished, TypeRemoved, TypeDrafted, TypeDiscarded, TypeDraftRejected} {
		assert.True(t, seen[typ], typ)
	}
}

// TestRebuildAfterRestart reopens a boltstore and rebuilds the library
// from its log, and rebuilds it as of an earlier seq.
func TestRebuildAfterRestart(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "clutch.db")
	st, err := boltstore.Open(file, nil)
	require.NoError(t, err)
	l, err := Open(ctx, st, &Options{Workspace: "team"})
	require.NoError(t, err)
	w, r, _ := seed(t, l)
	mid := l.Seq()
	s, err := l.Session(ctx, "agent:host", "s")
	require.NoError(t, err)
	_, err = s.Artifact(ctx, Command{Resource: "rule", Op: "update", ID: w.ID, Body: "# v2\n\n## New\n"})
	require.NoError(t, err)
	_, err = l.Approve(ctx, "agent:lead", "agent:host", w.ID)
	require.NoError(t, err)
	_, err = s.Artifact(ctx, Command{Resource: "context", Op: "create", Path: "context/NOTES.md", Body: "notes"})
	require.NoError(t, err)
	require.NoError(t, l.Remove(ctx, "agent:lead", r.ID))
	wantDocs, wantDrafts := l.Documents(), l.Drafts()
	require.NoError(t, st.Close())

	st, err = boltstore.Open(file, nil)
	require.NoError(t, err)
	defer st.Close()
	l2, err := Open(ctx, st, &Options{Workspace: "team"})
	require.NoError(t, err)
	assert.Equal(t, wantDocs, l2.Documents())
	assert.Equal(t, wantDrafts, l2.Drafts())
	content, cs, err := l2.Content(ctx, w.ID)
	require.NoError(t, err)
	assert.Equal(t, "# v2\n\n## New\n", content)
	assert.Equal(t, []string{"New"}, ids(cs))

	old, err := Open(ctx, st, &Options{Workspace: "team", AsOf: mid})
	require.NoError(t, err)
	assert.Len(t, old.Documents(), 3)
	assert.Empty(t, old.Drafts())
	_, err = old.Publish(ctx, "agent:lead", Publish{Path: "x.md", Content: "x"})
	assert.ErrorIs(t, err, ErrReadOnly)

	other, err := Open(ctx, st, &Options{Workspace: "elsewhere"})
	require.NoError(t, err)
	assert.Empty(t, other.Documents(), "workspaces are separate")
}

func TestErrorsCarryCodes(t *testing.T) {
	assert.Equal(t, protocol.CodeConflict, protocol.CodeOf(wrap(ErrDraftExists, "x")))
	assert.Equal(t, protocol.CodeNotFound, protocol.CodeOf(wrap(ErrNotFound, "x")))
	var re error = &ReferError{Code: CodeUnknownConstraint}
	assert.True(t, errors.Is(re, ErrUnknownConstraint))
	assert.Equal(t, protocol.CodeInvalidField, protocol.CodeOf(re))
}

// TestTwoWriters: two libraries of one workspace over one store (two
// processes over a shared store) see each other's changes.
func TestTwoWriters(t *testing.T) {
	ctx := context.Background()
	a, st, _ := newLib(t)
	b, err := Open(ctx, st, &Options{Workspace: "team"})
	require.NoError(t, err)
	w, _, _ := seed(t, a)
	s, err := b.Session(ctx, "agent:host", "s")
	require.NoError(t, err)
	ld, err := s.Load(ctx, []string{w.ID}, map[string]string{w.ID: ""})
	require.NoError(t, err, "b sees a's documents on its next call")
	assert.Equal(t, codingMD+ReferReminder(w.ID), *ld[0].Content)

	_, err = s.Artifact(ctx, Command{Resource: "rule", Op: "update", ID: w.ID, Body: "# b's draft\n"})
	require.NoError(t, err)
	assert.Empty(t, a.Drafts(), "not synced yet")
	require.NoError(t, a.Sync(ctx))
	require.Len(t, a.Drafts(), 1)
	doc, err := a.Approve(ctx, "agent:lead", "agent:host", w.ID)
	require.NoError(t, err)
	require.NoError(t, b.Sync(ctx))
	got, ok := b.Document(w.ID)
	require.True(t, ok)
	assert.Equal(t, doc, got)
	assert.Empty(t, b.Drafts())
	assert.Equal(t, a.Seq(), b.Seq())
}

// TestForeignEventsChangeNothing: library events that break the rules,
// appended by another writer, are skipped on rebuild.
func TestForeignEventsChangeNothing(t *testing.T) {
	ctx := context.Background()
	l, st, _ := newLib(t)
	w, _, _ := seed(t, l)
	runID, threadID, taskID := l.Run()
	for _, p := range []any{
		PublishedEvent{ID: "doc_x", Kind: KindRule, Path: "../escape.md", Hash: w.Hash, Content: w.Content, Version: 1},
		PublishedEvent{ID: "doc_y", Kind: "policy", Path: "rules/y.md", Hash: w.Hash, Content: w.Content, Version: 1},
		PublishedEvent{ID: MPFID, Kind: KindRule, Path: "rules/z.md", Hash: w.Hash, Content: w.Content, Version: 1},
		PublishedEvent{ID: "doc_z", Kind: KindRule, Path: "rules/z.md", Hash: w.Hash, Content: "not-a-ref", Version: 1},
		map[string]any{"id": 7},
	} {
		m := protocol.NewMessage(TypePublished, "agent:foreign")
		m.RunID, m.ThreadID, m.TaskID = runID, threadID, taskID
		require.NoError(t, m.SetPayload(p))
		_, err := st.Append(ctx, m)
		require.NoError(t, err)
	}
	m := protocol.NewMessage(TypeDrafted, "agent:foreign")
	m.RunID, m.ThreadID, m.TaskID = runID, threadID, taskID
	require.NoError(t, m.SetPayload(DraftedEvent{Draft: Draft{ID: w.ID, Op: "update", Path: "/etc/passwd"}}))
	_, err := st.Append(ctx, m)
	require.NoError(t, err)

	l2, err := Open(ctx, st, &Options{Workspace: "team"})
	require.NoError(t, err)
	assert.Equal(t, l.Documents(), l2.Documents())
	assert.Empty(t, l2.Drafts())
	require.NoError(t, l.Sync(ctx))
	assert.Equal(t, l2.Documents(), l.Documents())
	_, err = l.Publish(ctx, "agent:lead", Publish{ID: MPFID, Kind: KindRule, Path: "rules/q.md", Content: "q"})
	assert.Error(t, err)
}

func TestApproveCreate(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLib(t)
	s, err := l.Session(ctx, "agent:host", "s")
	require.NoError(t, err)
	res, err := s.Artifact(ctx, Command{Resource: "rule", Op: "create", Path: "workflows/RELEASE.md", Body: "## Steps\n- tag\n", Description: "how we release"})
	require.NoError(t, err)
	doc, err := l.Approve(ctx, "agent:lead", "agent:host", res.ID)
	require.NoError(t, err)
	assert.Equal(t, KindWorkflow, doc.Kind)
	assert.Equal(t, "how we release", doc.Description)
	assert.Regexp(t, `^doc_`, doc.ID)
	assert.Empty(t, l.Drafts())
	items, err := s.Discover(ctx, Filter{})
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Equal(t, doc.ID, items[0].ID, "the tmp id is gone, the document has its own")
	assert.False(t, items[0].HasDraft)
}

// DraftContent gives a reviewer the document as it is and as the draft
// would make it, for each kind of draft.
func TestDraftContent(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLib(t)
	workflow, rule, ctxDoc := seed(t, l)
	s, err := l.Session(ctx, "agent:host", "s")
	require.NoError(t, err)
	_, err = s.Artifact(ctx, Command{Resource: "rule", Op: "rename", ID: workflow.ID, NewPath: "workflow/CODE.md"})
	require.NoError(t, err)
	created, err := s.Artifact(ctx, Command{Resource: "context", Op: "create", Path: "context/NEW.md", Body: "# New\n"})
	require.NoError(t, err)
	_, err = s.Artifact(ctx, Command{Resource: "rule", Op: "update", ID: rule.ID, Body: reviewMD + "- lint clean\n"})
	require.NoError(t, err)
	_, err = s.Artifact(ctx, Command{Resource: "context", Op: "delete", ID: ctxDoc.ID})
	require.NoError(t, err)
	_, err = s.Artifact(ctx, Command{Resource: "mpf", Op: "update", ID: MPFID, Body: "# Ours\n"})
	require.NoError(t, err)
	for _, c := range []struct{ id, base, text string }{
		{created.ID, "", "# New\n"},
		{rule.ID, reviewMD, reviewMD + "- lint clean\n"},
		{ctxDoc.ID, setupMD, ""},
		{MPFID, DefaultMetaPrompt, "# Ours\n"},
		{workflow.ID, codingMD, codingMD},
	} {
		base, text, err := l.DraftContent(ctx, "agent:host", c.id)
		require.NoError(t, err, c.id)
		assert.Equal(t, c.base, base, c.id)
		assert.Equal(t, c.text, text, c.id)
	}
	_, _, err = l.DraftContent(ctx, "agent:other", rule.ID)
	assert.ErrorIs(t, err, ErrNoDraft)
}
