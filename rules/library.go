package rules

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
)

// MPFID is the id and the path of the meta-prompt.
const MPFID = "META_PROMPT.md"

// MaxDocumentSize is the largest document content accepted.
const MaxDocumentSize = 1 << 20

// DefaultAgentID is the sender of the library events of imports when
// Options.AgentID is "".
const DefaultAgentID = "agent:rules"

// DefaultMetaPrompt is the meta-prompt of a workspace that has not
// published one.
const DefaultMetaPrompt = `# Working with this team's rules

Protocol: discover -> load -> apply -> refer -> refine -> submit.

1. Call memsetup once at the start of the session, with the host session id.
2. Discover what exists with memdisc; load only what the task needs with memload,
   passing the hashes you remember so unchanged content is not sent again.
3. Apply the loaded rules and workflows in your work.
4. Declare each constraint that shaped the work with memref, copying the
   constraint ids memload returned.
5. Propose changes to rules, context or this meta-prompt with artifact.
6. End the turn with agentreport, or agentrejected when the work did not follow
   the loaded constraints.

Priority: loaded rules > this meta-prompt > your defaults.
`

// Document is one published document of a library.
type Document struct {
	ID          string `json:"id"`
	Kind        Kind   `json:"kind"`
	Path        string `json:"path"`  // workspace-relative, "rules/go/ERRORS.md"
	Name        string `json:"name"`  // from the path: "ERRORS"
	Group       string `json:"group"` // the path's first segment: "rules"
	Description string `json:"description,omitempty"`
	Hash        string `json:"hash"`    // "sha256:<hex>" of the content
	Content     string `json:"content"` // the artifact holding it
	Version     int    `json:"version"`
}

// Draft is a change an agent proposed (docs/protocol.md §15.9): it stays
// the author's until it is discarded, approved or rejected.
type Draft struct {
	// ID is the target document's id, or a tmp- id for a create.
	ID       string `json:"id"`
	Op       string `json:"op"`       // "create", "update", "rename" or "delete"
	Resource string `json:"resource"` // "context", "rule" or "mpf"
	Kind     Kind   `json:"kind"`
	Path     string `json:"path"` // the target's path; the new one for a create
	NewPath  string `json:"new_path,omitempty"`
	// Description is the author's summary of the change; the description
	// of the document a create publishes.
	Description string `json:"description,omitempty"`
	Hash        string `json:"hash,omitempty"`    // of the body (create, update)
	Content     string `json:"content,omitempty"` // the artifact holding the body
	// BaseHash is the target's hash when the draft was made (update,
	// rename, delete): approving it needs the document unchanged.
	BaseHash string `json:"base_hash,omitempty"`
	// Author is the agent that made it (the sender of its event).
	Author string `json:"-"`
}

// Options configures a Library. Nil means defaults.
type Options struct {
	// Workspace names the library; its id is derived from it (see
	// Library.WorkspaceID). "default" when "".
	Workspace string
	// AgentID sends library events that have no agent behind them
	// (imports); DefaultAgentID when "".
	AgentID string
	// IDs makes message ids and timestamps; protocol.DefaultIDs() when nil.
	IDs *protocol.IDs
	// Schemas, when set, gets the payload types of the package's events
	// (RegisterSchemas).
	Schemas *schema.Registry
	// AsOf, when not 0, rebuilds the library as it was after the event
	// with this seq; such a library is read-only (ErrReadOnly).
	AsOf uint64
}

// Library is a workspace's rules, workflows and context documents and its
// meta-prompt, kept as events in a store (docs/protocol.md §15.9). It is
// safe for concurrent use.
type Library struct {
	st   store.Store
	ids  *protocol.IDs
	opts Options
	ws   string // workspace id

	runID, threadID, taskID string

	mu      sync.RWMutex
	seq     uint64        // the last library event applied
	checked atomic.Uint64 // the store's last seq when the library last synced
	docs    map[string]*docState
	byPath  map[string]string // path → id
	drafts  map[draftKey]*Draft
}

type draftKey struct{ author, id string }

// docState is a document with its content and constraints, read from the
// artifact store on first use.
type docState struct {
	Document
	once        sync.Once
	err         error
	content     string
	constraints []Constraint
}

// Open rebuilds the library of opts.Workspace from st's log. opts may be
// nil.
func Open(ctx context.Context, st store.Store, opts *Options) (*Library, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Workspace == "" {
		o.Workspace = "default"
	}
	if o.AgentID == "" {
		o.AgentID = DefaultAgentID
	}
	if !validAgent(o.AgentID) {
		return nil, wrap(ErrInvalidParams, "Options.AgentID must start with agent:")
	}
	if o.IDs == nil {
		o.IDs = protocol.DefaultIDs()
	}
	if o.Schemas != nil {
		if err := RegisterSchemas(o.Schemas); err != nil {
			return nil, err
		}
	}
	sum := sha256.Sum256([]byte(o.Workspace))
	ws := "ws-" + hex.EncodeToString(sum[:16])
	l := &Library{st: st, ids: o.IDs, opts: o, ws: ws,
		runID: protocol.PrefixRun + "rules:" + ws, threadID: protocol.PrefixThread + "rules:" + ws, taskID: protocol.PrefixTask + "rules:" + ws,
		docs: map[string]*docState{}, byPath: map[string]string{}, drafts: map[draftKey]*Draft{}}
	for ev, err := range st.Read(ctx, store.Query{RunID: l.runID}) {
		if err != nil {
			return nil, err
		}
		if o.AsOf != 0 && ev.Seq > o.AsOf {
			break
		}
		m, err := ev.Message()
		if err != nil {
			return nil, err
		}
		l.apply(m) // an event that breaks the rules changes nothing
		l.seq = ev.Seq
	}
	if o.AsOf == 0 {
		last, err := st.LastSeq(ctx)
		if err != nil {
			return nil, err
		}
		l.checked.Store(last)
	}
	return l, nil
}

// WorkspaceID returns the workspace's id: "ws-" and 32 hex digits derived
// from Options.Workspace.
func (l *Library) WorkspaceID() string { return l.ws }

// Run returns the run, thread and task ids under which the library's own
// events are stored.
func (l *Library) Run() (runID, threadID, taskID string) { return l.runID, l.threadID, l.taskID }

// Seq returns the seq of the last library event applied.
func (l *Library) Seq() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.seq
}

func validAgent(id string) bool {
	return strings.HasPrefix(id, protocol.PrefixAgent) && len(id) > len(protocol.PrefixAgent)
}

// Documents returns the published documents, the meta-prompt included
// when published, sorted by path.
func (l *Library) Documents() []Document {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]Document, 0, len(l.docs))
	for _, d := range l.docs {
		out = append(out, d.Document)
	}
	slices.SortFunc(out, func(a, b Document) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Document returns the published document with this id.
func (l *Library) Document(id string) (Document, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	d, ok := l.docs[id]
	if !ok {
		return Document{}, false
	}
	return d.Document, true
}

// Content returns a published document's content and constraints (none
// for context and the meta-prompt). The meta-prompt of a workspace that
// has published none is DefaultMetaPrompt.
func (l *Library) Content(ctx context.Context, id string) (string, []Constraint, error) {
	if err := l.refresh(ctx); err != nil {
		return "", nil, err
	}
	l.mu.RLock()
	d, ok := l.docs[id]
	l.mu.RUnlock()
	if !ok {
		if id == MPFID {
			return DefaultMetaPrompt, nil, nil
		}
		return "", nil, wrap(ErrUnknownID, id)
	}
	return l.read(ctx, d)
}

// Drafts returns every open draft, of every author, sorted by author and
// id: the review queue.
func (l *Library) Drafts() []Draft {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]Draft, 0, len(l.drafts))
	for _, d := range l.drafts {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b Draft) int {
		if c := strings.Compare(a.Author, b.Author); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// DraftContent returns the two texts a reviewer compares for an author's
// draft: base, the content of the document it changes as the library has
// it now ("" for a create; DefaultMetaPrompt for a meta-prompt never
// published), and text, what approving it would publish ("" for a delete;
// base for a rename). When the document changed since the draft was made
// (its hash is no longer Draft.BaseHash), approving it conflicts. It fails
// with ErrNoDraft when there is no such draft. Call Sync first to see other
// writers' drafts.
func (l *Library) DraftContent(ctx context.Context, author, id string) (base, text string, err error) {
	l.mu.RLock()
	dp, ok := l.drafts[draftKey{author, id}]
	var d Draft
	var cur *docState
	if ok {
		d, cur = *dp, l.docs[dp.ID]
	}
	l.mu.RUnlock()
	if !ok {
		return "", "", wrap(ErrNoDraft, author+" "+id)
	}
	if d.Op != "create" {
		switch {
		case cur != nil:
			if base, _, err = l.read(ctx, cur); err != nil {
				return "", "", err
			}
		case d.Kind == KindMPF:
			base = DefaultMetaPrompt
		}
	}
	switch d.Op {
	case "create", "update":
		if text, _, err = l.readDraft(ctx, &d); err != nil {
			return "", "", err
		}
	case "rename":
		text = base
	}
	return base, text, nil
}

// read returns d's content and constraints, fetching them once.
func (l *Library) read(ctx context.Context, d *docState) (string, []Constraint, error) {
	d.once.Do(func() {
		a, err := l.st.GetArtifact(ctx, d.Content)
		if err != nil {
			d.err = err
			return
		}
		d.content = string(a.Data)
		if d.Kind == KindRule || d.Kind == KindWorkflow {
			d.constraints = ParseConstraints(d.content)
		}
	})
	if d.err != nil {
		err := d.err
		// A failed read (a cancelled context, say) is tried again.
		l.mu.Lock()
		if cur := l.docs[d.ID]; cur == d {
			l.docs[d.ID] = &docState{Document: d.Document}
		}
		l.mu.Unlock()
		return "", nil, err
	}
	return d.content, d.constraints, nil
}

// readDraft returns a draft's body and constraints.
func (l *Library) readDraft(ctx context.Context, d *Draft) (string, []Constraint, error) {
	a, err := l.st.GetArtifact(ctx, d.Content)
	if err != nil {
		return "", nil, err
	}
	var cs []Constraint
	if d.Kind == KindRule || d.Kind == KindWorkflow {
		cs = ParseConstraints(string(a.Data))
	}
	return string(a.Data), cs, nil
}

// append stores a library event from actor and applies it. l.mu is held.
func (l *Library) appendLocked(ctx context.Context, actor string, typ protocol.Type, payload any) (*protocol.Message, error) {
	if l.opts.AsOf != 0 {
		return nil, ErrReadOnly
	}
	m := l.ids.NewMessage(typ, actor)
	m.RunID, m.ThreadID, m.TaskID = l.runID, l.threadID, l.taskID
	m.PayloadType = payloadOf[typ]
	m.SchemaRef = protocol.SchemaRefFor(m.PayloadType)
	if err := m.SetPayload(payload); err != nil {
		return nil, err
	}
	if _, err := l.st.Append(ctx, m); err != nil {
		return nil, err
	}
	// Apply it from the log, with anything another writer appended
	// before it.
	if err := l.syncLocked(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// syncLocked applies the library events stored after l.seq. l.mu is held.
func (l *Library) syncLocked(ctx context.Context) error {
	if l.opts.AsOf != 0 {
		return nil
	}
	last, err := l.st.LastSeq(ctx)
	if err != nil {
		return err
	}
	for ev, err := range l.st.Read(ctx, store.Query{RunID: l.runID, AfterSeq: l.seq}) {
		if err != nil {
			return err
		}
		m, err := ev.Message()
		if err != nil {
			return err
		}
		l.apply(m) // an event that breaks the rules changes nothing
		l.seq = ev.Seq
	}
	l.checked.Store(last)
	return nil
}

// Sync applies the library events other writers (another process over a
// shared store) appended since the library last looked. Every change
// and every session call does this already; call Sync before Documents,
// Document or Drafts to see the latest state.
func (l *Library) Sync(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.syncLocked(ctx)
}

// refresh syncs the library when the store has grown since it last
// looked: one cheap LastSeq when nothing happened.
func (l *Library) refresh(ctx context.Context) error {
	if l.opts.AsOf != 0 {
		return nil
	}
	last, err := l.st.LastSeq(ctx)
	if err != nil {
		return err
	}
	if last == l.checked.Load() {
		return nil
	}
	return l.Sync(ctx)
}

// apply changes the state by one library event. An event whose payload
// does not decode, or that breaks the rules of a document (docs/protocol.md
// §15.6) — written by a foreign writer — is refused and changes nothing.
func (l *Library) apply(m *protocol.Message) error {
	switch m.Type {
	case TypePublished:
		p, err := protocol.DecodePayload[PublishedEvent](m)
		if err != nil {
			return err
		}
		if err := checkDoc(p.ID, p.Kind, p.Path, p.Content); err != nil {
			return err
		}
		if old, ok := l.docs[p.ID]; ok && l.byPath[old.Path] == p.ID {
			delete(l.byPath, old.Path)
		}
		name, group := nameGroup(p.Path)
		l.docs[p.ID] = &docState{Document: Document{ID: p.ID, Kind: p.Kind, Path: p.Path, Name: name, Group: group,
			Description: p.Description, Hash: p.Hash, Content: p.Content, Version: p.Version}}
		l.byPath[p.Path] = p.ID
		if p.DraftAuthor != "" {
			l.dropDraftFor(p.DraftAuthor, p.ID, p.Path)
		}
	case TypeRemoved:
		p, err := protocol.DecodePayload[RemovedEvent](m)
		if err != nil {
			return err
		}
		if old, ok := l.docs[p.ID]; ok {
			if l.byPath[old.Path] == p.ID {
				delete(l.byPath, old.Path)
			}
			delete(l.docs, p.ID)
		}
		if p.DraftAuthor != "" {
			delete(l.drafts, draftKey{p.DraftAuthor, p.ID})
		}
	case TypeDrafted:
		p, err := protocol.DecodePayload[DraftedEvent](m)
		if err != nil {
			return err
		}
		d := p.Draft
		if _, ok := opFields[d.Op]; !ok || d.Op == "discard" || d.ID == "" || CheckPath(d.Path) != nil || (d.NewPath != "" && CheckPath(d.NewPath) != nil) {
			return wrap(ErrInvalidParams, "malformed draft")
		}
		if d.Content != "" {
			if _, err := store.ParseArtifactRef(d.Content); err != nil {
				return err
			}
		}
		d.Author = m.From.AgentID
		l.drafts[draftKey{d.Author, d.ID}] = &d
	case TypeDiscarded:
		p, err := protocol.DecodePayload[DiscardedEvent](m)
		if err != nil {
			return err
		}
		delete(l.drafts, draftKey{m.From.AgentID, p.ID})
	case TypeDraftRejected:
		p, err := protocol.DecodePayload[DraftRejectedEvent](m)
		if err != nil {
			return err
		}
		delete(l.drafts, draftKey{p.Author, p.ID})
	}
	return nil
}

// dropDraftFor removes the author's draft that a publication of id
// consumed: the draft of id itself, or the create draft at path.
func (l *Library) dropDraftFor(author, id, p string) {
	if _, ok := l.drafts[draftKey{author, id}]; ok {
		delete(l.drafts, draftKey{author, id})
		return
	}
	delete(l.drafts, draftKey{author, tmpID(p)})
}
