package rules

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// Session is an agent's use of a library (docs/protocol.md §15.4): every
// call records an attestation event from the agent, in the run, thread and
// task of the session. A Session is safe for concurrent use.
type Session struct {
	lib   *Library
	agent string
	ref   SessionRef
	task  *router.Task // the task the events are emitted through, if any
}

// ForTask returns the session of an in-process agent running t: its
// events are emitted through t (the task's run, thread and task, from the
// agent running it, with the attempt), and its session id is the task id.
func (l *Library) ForTask(t *router.Task) *Session {
	req := t.Request()
	return &Session{lib: l, agent: t.Agent(), task: t,
		ref: SessionRef{SessionID: t.ID(), RunID: req.RunID, ThreadID: req.ThreadID, TaskID: req.TaskID}}
}

// Session returns the session of agent bound to a host session id
// (docs/protocol.md §15.4). When sessionID is the id of a task the agent
// requested or took part in, the session's events go to that task's run,
// thread and task. Any other id (or ""), a task the agent has nothing to
// do with included, gets a run of its own derived from the agent and the
// id, so the answer tells nothing about other agents' tasks
// (docs/protocol.md §6.7). sessionID must be at most 200 bytes without control
// characters.
func (l *Library) Session(ctx context.Context, agentID, sessionID string) (*Session, error) {
	if !validAgent(agentID) {
		return nil, wrap(ErrInvalidParams, "the agent id must start with agent:")
	}
	if len(sessionID) > 200 || strings.ContainsFunc(sessionID, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return nil, wrap(ErrInvalidParams, "session_id must be at most 200 bytes without control characters")
	}
	s := &Session{lib: l, agent: agentID, ref: SessionRef{SessionID: sessionID}}
	if sessionID != "" {
		for ev, err := range l.st.Read(ctx, store.Query{TaskID: sessionID, TypePrefix: string(protocol.TypeTaskRequest), Limit: 1}) {
			if err != nil {
				return nil, err
			}
			m, err := ev.Message()
			if err != nil {
				return nil, err
			}
			took := m.From.AgentID == agentID
			if !took {
				for _, err := range l.st.Read(ctx, store.Query{TaskID: sessionID, AgentID: agentID, Limit: 1}) {
					if err != nil {
						return nil, err
					}
					took = true
				}
			}
			if !took {
				break // somebody else's task: a session id like any other
			}
			s.ref.RunID, s.ref.ThreadID, s.ref.TaskID = m.RunID, m.ThreadID, m.TaskID
			return s, nil
		}
	}
	sum := sha256.Sum256([]byte(agentID + "\x00" + sessionID))
	h := hex.EncodeToString(sum[:13])
	s.ref.RunID, s.ref.ThreadID, s.ref.TaskID = protocol.PrefixRun+"rules:"+h, protocol.PrefixThread+"rules:"+h, protocol.PrefixTask+"rules:"+h
	return s, nil
}

// Agent returns the session's agent id.
func (s *Session) Agent() string { return s.agent }

// Ref returns the session id and the run, thread and task its events go
// to.
func (s *Session) Ref() SessionRef { return s.ref }

// emit stores an attestation event of the session.
func (s *Session) emit(ctx context.Context, typ protocol.Type, payload any) (*protocol.Message, error) {
	if s.task != nil {
		return s.task.Emit(ctx, typ, payloadOf[typ], payload)
	}
	m := s.lib.ids.NewMessage(typ, s.agent)
	m.RunID, m.ThreadID, m.TaskID = s.ref.RunID, s.ref.ThreadID, s.ref.TaskID
	m.PayloadType = payloadOf[typ]
	m.SchemaRef = protocol.SchemaRefFor(m.PayloadType)
	if err := m.SetPayload(payload); err != nil {
		return nil, err
	}
	if _, err := s.lib.st.Append(ctx, m); err != nil {
		return nil, err
	}
	return m, nil
}

// MPF is the meta-prompt part of a SetupResult.
type MPF struct {
	Hash    string `json:"hash"`
	Content string `json:"content,omitempty"` // only when changed
	Changed bool   `json:"changed"`
}

// SetupResult is the result of Setup (memsetup).
type SetupResult struct {
	WorkspaceID string `json:"workspaceId"`
	SessionID   string `json:"sessionId"`
	MPF         MPF    `json:"mpf"`
	// RunID, ThreadID and TaskID are where the session's events go.
	RunID    string `json:"runId"`
	ThreadID string `json:"threadId"`
	TaskID   string `json:"taskId"`
}

// Setup starts the session (memsetup, docs/protocol.md §15.4): it returns
// the workspace id, the session id and the meta-prompt, whose content is
// left out when knownHashes["META_PROMPT.md"] is its current hash.
// knownHashes must hold that key ("" when the hash is unknown).
func (s *Session) Setup(ctx context.Context, knownHashes map[string]string) (*SetupResult, error) {
	if err := s.lib.refresh(ctx); err != nil {
		return nil, err
	}
	if knownHashes == nil {
		return nil, wrap(ErrInvalidParams, "knownHashes is required")
	}
	known, ok := knownHashes[MPFID]
	if !ok {
		return nil, wrap(ErrInvalidParams, "knownHashes must include "+MPFID+" (\"\" when the hash is unknown)")
	}
	v, err := s.lib.resolve(ctx, s.agent, MPFID)
	if err != nil {
		return nil, err
	}
	r := &SetupResult{WorkspaceID: s.lib.ws, SessionID: s.ref.SessionID, MPF: MPF{Hash: v.hash, Changed: known != v.hash},
		RunID: s.ref.RunID, ThreadID: s.ref.ThreadID, TaskID: s.ref.TaskID}
	if r.MPF.Changed {
		r.MPF.Content = v.content
	}
	if _, err := s.emit(ctx, TypeSetup, &SetupEvent{SessionID: s.ref.SessionID, WorkspaceID: s.lib.ws, MPFHash: v.hash, MPFChanged: r.MPF.Changed}); err != nil {
		return nil, err
	}
	return r, nil
}

// Filter narrows Discover.
type Filter struct {
	Kind  string `json:"kind,omitempty"`  // "rule", "workflow", "context" or "" for all
	Group string `json:"group,omitempty"` // the path's first segment
	Query string `json:"query,omitempty"` // words that must all appear in id, path, name, group, kind or description (any case)
}

// Item is one entry of Discover (memdisc).
type Item struct {
	ID          string `json:"id"`
	Kind        Kind   `json:"kind"`
	Path        string `json:"path"`
	Name        string `json:"name"`
	Group       string `json:"group,omitempty"`
	Hash        string `json:"hash"`
	Description string `json:"description,omitempty"`
	HasDraft    bool   `json:"hasDraft"`
}

// Discover lists the rules, workflows and context documents without their
// content (memdisc, docs/protocol.md §15.4), sorted by path: the published
// ones, and the session agent's create-only drafts under their tmp- ids.
func (s *Session) Discover(ctx context.Context, f Filter) ([]Item, error) {
	if err := s.lib.refresh(ctx); err != nil {
		return nil, err
	}
	switch Kind(f.Kind) {
	case "", KindRule, KindWorkflow, KindContext:
	default:
		return nil, wrap(ErrInvalidParams, "kind must be rule, workflow or context")
	}
	words := strings.Fields(strings.ToLower(f.Query))
	match := func(it Item) bool {
		if (f.Kind != "" && string(it.Kind) != f.Kind) || (f.Group != "" && it.Group != f.Group) {
			return false
		}
		hay := strings.ToLower(strings.Join([]string{it.ID, it.Path, it.Name, it.Group, string(it.Kind), it.Description}, "\n"))
		for _, w := range words {
			if !strings.Contains(hay, w) {
				return false
			}
		}
		return true
	}
	l := s.lib
	items := []Item{}
	l.mu.RLock()
	for _, d := range l.docs {
		if d.Kind == KindMPF {
			continue
		}
		_, has := l.drafts[draftKey{s.agent, d.ID}]
		it := Item{ID: d.ID, Kind: d.Kind, Path: d.Path, Name: d.Name, Group: d.Group, Hash: d.Hash, Description: d.Description, HasDraft: has}
		if match(it) {
			items = append(items, it)
		}
	}
	for k, d := range l.drafts {
		if k.author != s.agent || d.Op != "create" || d.Kind == KindMPF {
			continue
		}
		name, group := nameGroup(d.Path)
		it := Item{ID: d.ID, Kind: d.Kind, Path: d.Path, Name: name, Group: group, Hash: d.Hash, Description: d.Description, HasDraft: true}
		if match(it) {
			items = append(items, it)
		}
	}
	l.mu.RUnlock()
	slices.SortFunc(items, func(a, b Item) int { return strings.Compare(a.Path, b.Path) })
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	if _, err := s.emit(ctx, TypeDiscover, &DiscoverEvent{SessionID: s.ref.SessionID, Kind: f.Kind, Group: f.Group, Query: f.Query, IDs: ids}); err != nil {
		return nil, err
	}
	return items, nil
}

// LoadedItem is one document of Load (memload).
type LoadedItem struct {
	ID            string `json:"id"`
	Kind          Kind   `json:"kind"`
	Path          string `json:"path"`
	Changed       bool   `json:"changed"`
	Hash          string `json:"hash"`
	HasDraft      bool   `json:"hasDraft"`
	DraftBaseHash string `json:"draftBaseHash,omitempty"`
	// Content is the text, with the refer reminder for rules and
	// workflows; nil when unchanged.
	Content *string `json:"content"`
	// Constraints are the referable entries of a rule or workflow, also
	// when the content is not sent; empty for context.
	Constraints []Constraint `json:"constraints"`
}

// ReferReminder returns the footer Load appends to the content of the rule
// or workflow id (docs/protocol.md §15.7).
func ReferReminder(id string) string {
	return "\n\n---\nRefer reminder: when a constraint of this document shapes your work, declare it with memref " +
		"(ruleId \"" + id + "\", constraintId copied exactly from this item's constraints[].id), " +
		"then close the turn with agentreport, or agentrejected if the work did not follow the loaded constraints.\n"
}

// Load returns the content of the documents ids (memload, docs/protocol.md
// §15.4) as the session's agent sees them: its own draft of a document
// when it has one, else the published version. knownHashes must hold an
// entry for every id ("" when unknown); the content of a document whose
// hash is that entry is left out (delta loading), its constraints are not.
// An id that names nothing is ErrUnknownID.
func (s *Session) Load(ctx context.Context, ids []string, knownHashes map[string]string) ([]LoadedItem, error) {
	if err := s.lib.refresh(ctx); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, wrap(ErrInvalidParams, "ids must name at least one document")
	}
	if knownHashes == nil {
		return nil, wrap(ErrInvalidParams, "knownHashes is required: one entry per requested id, \"\" when the hash is unknown")
	}
	for _, id := range ids {
		if _, ok := knownHashes[id]; !ok {
			return nil, wrap(ErrInvalidParams, "knownHashes has no entry for requested id "+id)
		}
	}
	items := make([]LoadedItem, 0, len(ids))
	recs := make([]LoadRecord, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		v, err := s.lib.resolve(ctx, s.agent, id)
		if err != nil {
			return nil, err
		}
		it := LoadedItem{ID: id, Kind: v.kind, Path: v.path, Hash: v.hash, HasDraft: v.hasDraft, DraftBaseHash: v.baseHash,
			Changed: knownHashes[id] != v.hash, Constraints: v.constraints}
		if it.Constraints == nil {
			it.Constraints = []Constraint{}
		}
		if it.Changed {
			c := v.content
			if v.kind == KindRule || v.kind == KindWorkflow {
				c += ReferReminder(id)
			}
			it.Content = &c
		}
		items = append(items, it)
		recs = append(recs, LoadRecord{ID: id, Path: v.path, Hash: v.hash, Changed: it.Changed, HasDraft: v.hasDraft})
	}
	if _, err := s.emit(ctx, TypeLoad, &LoadEvent{SessionID: s.ref.SessionID, Items: recs}); err != nil {
		return nil, err
	}
	return items, nil
}

// view is a document as one agent sees it.
type view struct {
	kind        Kind
	path        string
	hash        string
	hasDraft    bool
	baseHash    string
	content     string
	constraints []Constraint
}

// resolve returns the view agent has of id: its draft when it has one,
// else the published document (the default meta-prompt for an
// unpublished META_PROMPT.md).
func (l *Library) resolve(ctx context.Context, agent, id string) (view, error) {
	l.mu.RLock()
	d := l.drafts[draftKey{agent, id}]
	doc := l.docs[id]
	var dr Draft
	if d != nil {
		dr = *d
	}
	l.mu.RUnlock()
	var v view
	switch {
	case doc != nil:
		c, cs, err := l.read(ctx, doc)
		if err != nil {
			return v, err
		}
		v = view{kind: doc.Kind, path: doc.Path, hash: doc.Hash, content: c, constraints: cs}
	case id == MPFID:
		v = view{kind: KindMPF, path: MPFID, hash: HashContent([]byte(DefaultMetaPrompt)), content: DefaultMetaPrompt}
	case d == nil || (dr.Op != "create" && dr.Op != "update"):
		return v, wrap(ErrUnknownID, id)
	}
	if d == nil {
		return v, nil
	}
	v.hasDraft = true
	v.baseHash = dr.BaseHash
	switch dr.Op {
	case "create", "update":
		c, cs, err := l.readDraft(ctx, &dr)
		if err != nil {
			return v, err
		}
		v.kind, v.path, v.hash, v.content, v.constraints = dr.Kind, dr.Path, dr.Hash, c, cs
	case "rename":
		v.path = dr.NewPath
	}
	return v, nil
}

// Ref is one declared reference of Refer (memref).
type Ref struct {
	RuleID       string `json:"ruleId"`
	ConstraintID string `json:"constraintId"`
	RuleHash     string `json:"ruleHash,omitempty"`
	Reason       string `json:"reason,omitempty"`
}

// Refer declares that constraints of rules or workflows shaped the work
// (memref, docs/protocol.md §15.8) and returns how many references it
// recorded. The references are checked first and recorded together: an
// unknown rule or workflow (or a context document) is a *ReferError with
// code unknown_rule_or_workflow, an unknown constraint one with code
// unknown_constraint and the valid constraints; nothing is recorded then.
func (s *Session) Refer(ctx context.Context, refs []Ref) (int, error) {
	if err := s.lib.refresh(ctx); err != nil {
		return 0, err
	}
	if len(refs) == 0 {
		return 0, wrap(ErrInvalidParams, "refs must hold at least one reference")
	}
	recs := make([]ReferRecord, 0, len(refs))
	for i, r := range refs {
		if r.RuleID == "" || r.ConstraintID == "" {
			return 0, wrap(ErrInvalidParams, fmt.Sprintf("refs[%d] needs ruleId and constraintId", i))
		}
		v, err := s.lib.resolve(ctx, s.agent, r.RuleID)
		if err != nil && !errors.Is(err, ErrUnknownID) {
			return 0, err
		}
		if err != nil || (v.kind != KindRule && v.kind != KindWorkflow) {
			what := "is not a known rule or workflow"
			if err == nil {
				what = "is a " + string(v.kind) + " document, not a rule or workflow"
			}
			return 0, &ReferError{Code: CodeUnknownRuleOrWorkflow, RetryAction: ActionRediscover,
				Message: fmt.Sprintf("memref ruleId '%s' %s; rediscover with memdisc and reload with memload", r.RuleID, what)}
		}
		i := slices.IndexFunc(v.constraints, func(c Constraint) bool { return c.ID == r.ConstraintID })
		if i < 0 {
			valid := make([]ValidConstraint, len(v.constraints))
			names := make([]string, len(v.constraints))
			for j, c := range v.constraints {
				valid[j] = ValidConstraint{ID: c.ID, Name: c.Name, Text: c.Text}
				names[j] = c.ID
			}
			return 0, &ReferError{Code: CodeUnknownConstraint, RetryAction: ActionRetryConstraint, ValidConstraints: valid,
				Message: fmt.Sprintf("memref constraintId '%s' is not valid for ruleId '%s'; retry with one of: %s", r.ConstraintID, r.RuleID, strings.Join(names, ", "))}
		}
		recs = append(recs, ReferRecord{RuleID: r.RuleID, Path: v.path, ConstraintID: r.ConstraintID, TextHash: v.constraints[i].TextHash,
			Hash: v.hash, RuleHash: r.RuleHash, Reason: r.Reason})
	}
	if _, err := s.emit(ctx, TypeRefer, &ReferEvent{SessionID: s.ref.SessionID, Refs: recs}); err != nil {
		return 0, err
	}
	return len(recs), nil
}

// Report closes a successful turn with a summary (agentreport,
// docs/protocol.md §15.4); an empty summary is ErrInvalidParams.
func (s *Session) Report(ctx context.Context, summary string) error {
	if strings.TrimSpace(summary) == "" {
		return wrap(ErrInvalidParams, "summary must not be empty")
	}
	_, err := s.emit(ctx, TypeReport, &ReportEvent{SessionID: s.ref.SessionID, Summary: summary})
	return err
}

// Reject closes a turn whose output did not follow the loaded constraints
// (agentrejected, docs/protocol.md §15.4), with an optional reason.
func (s *Session) Reject(ctx context.Context, reason string) error {
	_, err := s.emit(ctx, TypeReject, &RejectEvent{SessionID: s.ref.SessionID, Reason: reason})
	return err
}
