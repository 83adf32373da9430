package rules

import (
	"context"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Command is an artifact command (docs/protocol.md §15.9): a resource and
// exactly one operation.
type Command struct {
	Resource string // "context", "rule" or "mpf"
	Op       string // "create", "update", "rename", "delete" or "discard"
	// ID names the target (update, rename, delete, discard): a document
	// id, a tmp- id of a create-only draft, or META_PROMPT.md.
	ID string
	// Path is the new document's path (create); NewPath the proposed path
	// (rename).
	Path, NewPath string
	// Body is the draft's content (create, update).
	Body string
	// Description is an optional summary of the change.
	Description string
}

// MaxCommandSize is the largest encoded artifact command DecodeCommand
// accepts.
const MaxCommandSize = MaxDocumentSize + 64<<10

// The operations of an artifact command and their members: which are
// required and which are allowed.
var opFields = map[string]struct{ required, optional []string }{
	"create":  {[]string{"path", "body"}, []string{"description"}},
	"update":  {[]string{"id", "body"}, []string{"description"}},
	"rename":  {[]string{"id", "new_path"}, []string{"description"}},
	"delete":  {[]string{"id"}, []string{"description"}},
	"discard": {[]string{"id"}, nil},
}

// DecodeCommand decodes the JSON of an artifact command,
// {"resource": …, "op": {"<op>": {…}}}, strictly: one JSON object with
// exactly the members "resource" and "op", op holding exactly one key,
// the operation's required members present as strings and no member it
// does not define, no duplicate names, valid UTF-8. Every failure is an
// ErrInvalidCommand error naming what is wrong.
func DecodeCommand(data []byte) (Command, error) {
	var c Command
	bad := func(format string, args ...any) (Command, error) {
		return Command{}, wrap(ErrInvalidCommand, fmt.Sprintf(format, args...))
	}
	if len(data) > MaxCommandSize {
		return bad("%d bytes, limit %d", len(data), MaxCommandSize)
	}
	var top map[string]jsontext.Value
	if err := json.Unmarshal(data, &top); err != nil {
		return bad("not a JSON object: %v", err)
	}
	if top == nil {
		return bad("not a JSON object")
	}
	for k := range top {
		if k != "resource" && k != "op" {
			return bad("unknown member %q", k)
		}
	}
	rv, ok := top["resource"]
	if !ok {
		return bad("resource is required")
	}
	if err := json.Unmarshal(rv, &c.Resource); err != nil || rv.Kind() != '"' {
		return bad("resource must be a string")
	}
	switch c.Resource {
	case "context", "rule", "mpf":
	default:
		return bad("resource must be context, rule or mpf, not %q", c.Resource)
	}
	ov, ok := top["op"]
	if !ok {
		return bad("op is required")
	}
	var op map[string]jsontext.Value
	if ov.Kind() != '{' {
		return bad("op must be an object")
	}
	if err := json.Unmarshal(ov, &op); err != nil {
		return bad("op: %v", err)
	}
	if len(op) != 1 {
		return bad("op must contain exactly one key (create, update, rename, delete or discard), it has %d", len(op))
	}
	for name, body := range op {
		fields, ok := opFields[name]
		if !ok {
			return bad("unknown op %q: use create, update, rename, delete or discard", name)
		}
		c.Op = name
		if body.Kind() != '{' {
			return bad("op.%s must be an object", name)
		}
		var m map[string]jsontext.Value
		if err := json.Unmarshal(body, &m); err != nil {
			return bad("op.%s: %v", name, err)
		}
		for k, v := range m {
			if !contains(fields.required, k) && !contains(fields.optional, k) {
				return bad("op.%s: unknown member %q", name, k)
			}
			var s string
			if v.Kind() != '"' || json.Unmarshal(v, &s) != nil {
				return bad("op.%s.%s must be a string", name, k)
			}
			switch k {
			case "id":
				c.ID = s
			case "path":
				c.Path = s
			case "new_path":
				c.NewPath = s
			case "body":
				c.Body = s
			case "description":
				c.Description = s
			}
		}
		for _, k := range fields.required {
			if _, ok := m[k]; !ok {
				return bad("op.%s.%s is required", name, k)
			}
		}
	}
	return c, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ArtifactResult is the result of an artifact command.
type ArtifactResult struct {
	OK bool `json:"ok"`
	// DraftPath is the path the draft is about: the new path of a create
	// or rename, the target's path otherwise.
	DraftPath string `json:"draft_path,omitempty"`
	// ID is the draft's id: the tmp- id of a create, the target's id
	// otherwise.
	ID string `json:"id,omitempty"`
	// Discarded reports that the command dropped a draft (discard, or a
	// delete of a create-only draft).
	Discarded bool `json:"discarded,omitempty"`
}

// Artifact runs an artifact command as the session's agent
// (docs/protocol.md §15.9): it stages, replaces or discards one of the
// agent's drafts, records the library event, and records an attestation
// event in the session. Its errors are those of §15.10: ErrUnsafePath,
// ErrNotFound ("file not found in cache"), ErrIncompatibleDraft,
// ErrDraftExists, ErrPathTaken, ErrNoDraft, ErrInvalidCommand.
func (s *Session) Artifact(ctx context.Context, c Command) (*ArtifactResult, error) {
	res, eventID, err := s.lib.stage(ctx, s, c)
	if err != nil {
		return nil, err
	}
	if _, err := s.emit(ctx, TypeArtifact, &ArtifactEvent{SessionID: s.ref.SessionID, Resource: c.Resource, Op: c.Op,
		ID: res.ID, Path: res.DraftPath, EventID: eventID}); err != nil {
		return nil, err
	}
	return res, nil
}

// stage applies an artifact command to the library.
func (l *Library) stage(ctx context.Context, s *Session, c Command) (*ArtifactResult, string, error) {
	switch c.Resource {
	case "context", "rule", "mpf":
	default:
		return nil, "", wrap(ErrInvalidCommand, "resource must be context, rule or mpf")
	}
	if _, ok := opFields[c.Op]; !ok {
		return nil, "", wrap(ErrInvalidCommand, "op must be create, update, rename, delete or discard")
	}
	if len(c.Body) > MaxDocumentSize {
		return nil, "", wrap(ErrTooLarge, fmt.Sprintf("%d bytes, limit %d", len(c.Body), MaxDocumentSize))
	}
	agent := s.agent
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.syncLocked(ctx); err != nil {
		return nil, "", err
	}
	mine := l.drafts[draftKey{agent, c.ID}]
	drafted := func(d Draft) (*ArtifactResult, string, error) {
		if d.Op == "create" || d.Op == "update" {
			ref, err := l.st.PutArtifact(ctx, "text/markdown", []byte(c.Body))
			if err != nil {
				return nil, "", err
			}
			d.Hash, d.Content = HashContent([]byte(c.Body)), ref
		}
		m, err := l.appendLocked(ctx, agent, TypeDrafted, &DraftedEvent{Draft: d, Session: sessionRef(s)})
		if err != nil {
			return nil, "", err
		}
		p := d.Path
		if d.NewPath != "" {
			p = d.NewPath
		}
		return &ArtifactResult{OK: true, DraftPath: p, ID: d.ID}, m.ID, nil
	}
	discard := func(d *Draft) (*ArtifactResult, string, error) {
		m, err := l.appendLocked(ctx, agent, TypeDiscarded, &DiscardedEvent{ID: d.ID, Session: sessionRef(s)})
		if err != nil {
			return nil, "", err
		}
		return &ArtifactResult{OK: true, DraftPath: d.Path, ID: d.ID, Discarded: true}, m.ID, nil
	}
	// target returns the published document c.ID names within c's
	// resource; the unpublished meta-prompt is a document of its own.
	target := func() (Document, bool) {
		if c.Resource == "mpf" {
			if c.ID != MPFID {
				return Document{}, false
			}
			if d, ok := l.docs[MPFID]; ok {
				return d.Document, true
			}
			return Document{ID: MPFID, Kind: KindMPF, Path: MPFID, Hash: HashContent([]byte(DefaultMetaPrompt))}, true
		}
		d, ok := l.docs[c.ID]
		if !ok || ResourceOf(d.Kind) != c.Resource {
			return Document{}, false
		}
		return d.Document, true
	}
	notFound := func() error { return wrap(ErrNotFound, fmt.Sprintf("no %s with id %q", c.Resource, c.ID)) }
	incompatible := func() error {
		return wrap(ErrIncompatibleDraft, fmt.Sprintf("%s has a %s draft; discard it first", c.ID, mine.Op))
	}

	switch c.Op {
	case "create":
		if c.Resource == "mpf" {
			return nil, "", wrap(ErrInvalidCommand, "the meta-prompt always exists: use update with id "+MPFID)
		}
		if err := CheckPath(c.Path); err != nil {
			return nil, "", err
		}
		if c.Path == MPFID {
			return nil, "", wrap(ErrUnsafePath, MPFID+" is reserved for the meta-prompt")
		}
		if l.pathDrafted(agent, c.Path) {
			return nil, "", wrap(ErrDraftExists, c.Path)
		}
		if _, ok := l.byPath[c.Path]; ok {
			return nil, "", wrap(ErrPathTaken, c.Path)
		}
		return drafted(Draft{ID: tmpID(c.Path), Op: "create", Resource: c.Resource, Kind: KindOf(c.Resource, c.Path), Path: c.Path, Description: c.Description})
	case "update":
		if mine != nil && mine.Op != "update" {
			return nil, "", incompatible()
		}
		doc, ok := target()
		if !ok {
			return nil, "", notFound()
		}
		base := doc.Hash
		if mine != nil {
			base = mine.BaseHash
		}
		return drafted(Draft{ID: doc.ID, Op: "update", Resource: c.Resource, Kind: doc.Kind, Path: doc.Path, Description: c.Description, BaseHash: base})
	case "rename":
		if c.Resource == "mpf" {
			return nil, "", wrap(ErrInvalidCommand, "the meta-prompt has the reserved path "+MPFID+" and cannot be renamed")
		}
		if mine != nil && mine.Op != "rename" {
			return nil, "", incompatible()
		}
		if err := CheckPath(c.NewPath); err != nil {
			return nil, "", err
		}
		if c.NewPath == MPFID {
			return nil, "", wrap(ErrUnsafePath, MPFID+" is reserved for the meta-prompt")
		}
		doc, ok := target()
		if !ok {
			return nil, "", notFound()
		}
		if other, ok := l.byPath[c.NewPath]; ok && other != doc.ID {
			return nil, "", wrap(ErrPathTaken, c.NewPath)
		}
		if (mine == nil || mine.NewPath != c.NewPath) && l.pathDrafted(agent, c.NewPath) {
			return nil, "", wrap(ErrDraftExists, c.NewPath)
		}
		return drafted(Draft{ID: doc.ID, Op: "rename", Resource: c.Resource, Kind: doc.Kind, Path: doc.Path, NewPath: c.NewPath, Description: c.Description, BaseHash: doc.Hash})
	case "delete":
		if mine != nil && mine.Op == "create" {
			return discard(mine) // deleting a create-only draft drops it
		}
		if mine != nil && mine.Op != "delete" {
			return nil, "", incompatible()
		}
		doc, ok := target()
		if !ok || (c.Resource == "mpf" && l.docs[MPFID] == nil) {
			return nil, "", notFound()
		}
		return drafted(Draft{ID: doc.ID, Op: "delete", Resource: c.Resource, Kind: doc.Kind, Path: doc.Path, Description: c.Description, BaseHash: doc.Hash})
	default: // discard
		if mine == nil {
			return nil, "", wrap(ErrNoDraft, fmt.Sprintf("%s has no draft %q", agent, c.ID))
		}
		return discard(mine)
	}
}

// pathDrafted reports whether agent has a draft that creates p or renames
// a document to p.
func (l *Library) pathDrafted(agent, p string) bool {
	for k, d := range l.drafts {
		if k.author == agent && ((d.Op == "create" && d.Path == p) || (d.Op == "rename" && d.NewPath == p)) {
			return true
		}
	}
	return false
}

func sessionRef(s *Session) *SessionRef {
	r := s.ref
	return &r
}
