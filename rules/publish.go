package rules

import (
	"context"
	"fmt"
)

// Publish is a document to publish with Library.Publish.
type Publish struct {
	// ID is the document to publish a new version of; "" means the
	// document at Path, or a new one.
	ID string
	// Kind is the document's kind; "" decides by path (KindOf).
	Kind        Kind
	Path        string
	Description string
	Content     string
}

// Publish publishes a version of a document as actor (source "api"):
// a new document, or a new version of the one with p.ID or at p.Path. It
// returns the document as published; publishing what is already there
// stores nothing.
func (l *Library) Publish(ctx context.Context, actor string, p Publish) (Document, error) {
	if !validAgent(actor) {
		return Document{}, wrap(ErrInvalidParams, "actor must start with agent:")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.syncLocked(ctx); err != nil {
		return Document{}, err
	}
	return l.publishLocked(ctx, actor, p, "api", nil)
}

func (l *Library) publishLocked(ctx context.Context, actor string, p Publish, source string, draft *Draft) (Document, error) {
	if err := CheckPath(p.Path); err != nil {
		return Document{}, err
	}
	if len(p.Content) > MaxDocumentSize {
		return Document{}, wrap(ErrTooLarge, fmt.Sprintf("%d bytes, limit %d", len(p.Content), MaxDocumentSize))
	}
	switch p.Kind {
	case "":
		p.Kind = KindOf("", p.Path)
	case KindRule, KindWorkflow, KindContext, KindMPF:
	default:
		return Document{}, wrap(ErrInvalidParams, fmt.Sprintf("kind %q is not rule, workflow, context or mpf", p.Kind))
	}
	if (p.Kind == KindMPF) != (p.Path == MPFID) {
		return Document{}, wrap(ErrUnsafePath, "the meta-prompt, and only it, lives at "+MPFID)
	}
	if p.Kind == KindMPF {
		p.ID = MPFID
	}
	if p.ID == "" {
		p.ID = l.byPath[p.Path]
	}
	version := 1
	if old, ok := l.docs[p.ID]; ok {
		version = old.Version + 1
		if old.Hash == HashContent([]byte(p.Content)) && old.Path == p.Path && old.Description == p.Description && old.Kind == p.Kind && draft == nil {
			return old.Document, nil
		}
	} else if p.ID == "" {
		p.ID = l.ids.New("doc_")
	}
	if other, ok := l.byPath[p.Path]; ok && other != p.ID {
		return Document{}, wrap(ErrPathTaken, p.Path)
	}
	ref, err := l.st.PutArtifact(ctx, "text/markdown", []byte(p.Content))
	if err != nil {
		return Document{}, err
	}
	if err := checkDoc(p.ID, p.Kind, p.Path, ref); err != nil {
		return Document{}, err
	}
	ev := PublishedEvent{ID: p.ID, Kind: p.Kind, Path: p.Path, Description: p.Description, Hash: HashContent([]byte(p.Content)),
		Content: ref, Version: version, Source: source}
	if draft != nil {
		ev.DraftAuthor, ev.DraftOp = draft.Author, draft.Op
	}
	if _, err := l.appendLocked(ctx, actor, TypePublished, &ev); err != nil {
		return Document{}, err
	}
	d, ok := l.docs[p.ID]
	if !ok { // removed by another writer in the meantime
		return Document{}, wrap(ErrConflict, p.ID+" was removed meanwhile")
	}
	return d.Document, nil
}

// Remove removes a document as actor (source "api").
func (l *Library) Remove(ctx context.Context, actor, id string) error {
	if !validAgent(actor) {
		return wrap(ErrInvalidParams, "actor must start with agent:")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.syncLocked(ctx); err != nil {
		return err
	}
	d, ok := l.docs[id]
	if !ok {
		return wrap(ErrNotFound, id)
	}
	_, err := l.appendLocked(ctx, actor, TypeRemoved, &RemovedEvent{ID: id, Path: d.Path, Version: d.Version, Source: "api"})
	return err
}

// Approve publishes an author's draft as reviewer (docs/protocol.md
// §15.9): a create becomes a new document, an update a new version, a
// rename a version at the new path, a delete removes the document. It
// fails with ErrNoDraft when there is no such draft, and with ErrConflict
// when the document changed since the draft was based on it or the path
// was taken meanwhile; the draft then stays.
func (l *Library) Approve(ctx context.Context, reviewer, author, id string) (Document, error) {
	if !validAgent(reviewer) {
		return Document{}, wrap(ErrInvalidParams, "reviewer must start with agent:")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.syncLocked(ctx); err != nil {
		return Document{}, err
	}
	d, ok := l.drafts[draftKey{author, id}]
	if !ok {
		return Document{}, wrap(ErrNoDraft, author+" "+id)
	}
	cur, exists := l.docs[d.ID]
	if d.Op != "create" {
		if !exists && !(d.Kind == KindMPF && d.BaseHash == HashContent([]byte(DefaultMetaPrompt))) {
			return Document{}, wrap(ErrConflict, d.ID+" no longer exists")
		}
		if exists && cur.Hash != d.BaseHash {
			return Document{}, wrap(ErrConflict, fmt.Sprintf("%s changed since the draft (base %s, now %s)", d.ID, d.BaseHash, cur.Hash))
		}
	}
	switch d.Op {
	case "delete":
		if !exists { // the default meta-prompt: nothing to remove
			_, err := l.appendLocked(ctx, reviewer, TypeDiscarded, &DiscardedEvent{ID: d.ID})
			return Document{}, err
		}
		doc := cur.Document
		_, err := l.appendLocked(ctx, reviewer, TypeRemoved, &RemovedEvent{ID: d.ID, Path: cur.Path, Version: cur.Version, Source: "review", DraftAuthor: author})
		return doc, err
	case "rename":
		if other, ok := l.byPath[d.NewPath]; ok && other != d.ID {
			return Document{}, wrap(ErrConflict, "path "+d.NewPath+" is taken")
		}
		content, _, err := l.read(ctx, cur)
		if err != nil {
			return Document{}, err
		}
		desc := cur.Description
		return l.publishLocked(ctx, reviewer, Publish{ID: d.ID, Kind: KindOf(d.Resource, d.NewPath), Path: d.NewPath, Description: desc, Content: content}, "review", d)
	}
	body, _, err := l.readDraft(ctx, d)
	if err != nil {
		return Document{}, err
	}
	p := Publish{ID: d.ID, Kind: d.Kind, Path: d.Path, Description: d.Description, Content: body}
	if d.Op == "create" {
		if _, ok := l.byPath[d.Path]; ok {
			return Document{}, wrap(ErrConflict, "path "+d.Path+" is taken")
		}
		p.ID = ""
	} else {
		// An update's description summarises the change (it stays in the
		// drafted event); the document keeps its own.
		p.Description = ""
		if exists {
			p.Description = cur.Description
		}
	}
	return l.publishLocked(ctx, reviewer, p, "review", d)
}

// RejectDraft rejects an author's draft as reviewer, with a reason.
func (l *Library) RejectDraft(ctx context.Context, reviewer, author, id, reason string) error {
	if !validAgent(reviewer) {
		return wrap(ErrInvalidParams, "reviewer must start with agent:")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.syncLocked(ctx); err != nil {
		return err
	}
	if _, ok := l.drafts[draftKey{author, id}]; !ok {
		return wrap(ErrNoDraft, author+" "+id)
	}
	_, err := l.appendLocked(ctx, reviewer, TypeDraftRejected, &DraftRejectedEvent{ID: id, Author: author, Reason: reason})
	return err
}
