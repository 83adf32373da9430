package rules

import (
	"errors"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
)

// Library events (docs/protocol.md §15.9): every change of a workspace's
// library, in the library's own run. Replaying them in order rebuilds the
// library.
const (
	// TypePublished: a version of a document was published (imported,
	// approved from a draft, or put through the Go API).
	TypePublished protocol.Type = "x.clutch.rules.published"
	// TypeRemoved: a document was removed.
	TypeRemoved protocol.Type = "x.clutch.rules.removed"
	// TypeDrafted: an agent staged a draft (artifact create, update,
	// rename or delete), replacing its earlier draft of the same target.
	TypeDrafted protocol.Type = "x.clutch.rules.drafted"
	// TypeDiscarded: a draft was dropped by its author (artifact discard,
	// or delete of a create-only draft).
	TypeDiscarded protocol.Type = "x.clutch.rules.discarded"
	// TypeDraftRejected: a reviewer rejected a draft.
	TypeDraftRejected protocol.Type = "x.clutch.rules.draft_rejected"
)

// Attestation events (docs/protocol.md §15.5): what an agent did with the
// library, from the agent, in the run, thread and task of its session.
const (
	TypeSetup    protocol.Type = "x.clutch.rules.setup"
	TypeDiscover protocol.Type = "x.clutch.rules.discover"
	TypeLoad     protocol.Type = "x.clutch.rules.load"
	TypeRefer    protocol.Type = "x.clutch.rules.refer"
	TypeReport   protocol.Type = "x.clutch.rules.report"
	TypeReject   protocol.Type = "x.clutch.rules.reject"
	TypeArtifact protocol.Type = "x.clutch.rules.artifact"
)

// The payload types of the events, registered by RegisterSchemas.
const (
	PayloadPublished     = "rules.published.v1"
	PayloadRemoved       = "rules.removed.v1"
	PayloadDrafted       = "rules.drafted.v1"
	PayloadDiscarded     = "rules.discarded.v1"
	PayloadDraftRejected = "rules.draft_rejected.v1"
	PayloadSetup         = "rules.setup.v1"
	PayloadDiscover      = "rules.discover.v1"
	PayloadLoad          = "rules.load.v1"
	PayloadRefer         = "rules.refer.v1"
	PayloadReport        = "rules.report.v1"
	PayloadReject        = "rules.reject.v1"
	PayloadArtifact      = "rules.artifact.v1"
)

// PublishedEvent is the payload of TypePublished.
type PublishedEvent struct {
	ID          string `json:"id"`
	Kind        Kind   `json:"kind"`
	Path        string `json:"path"`
	Description string `json:"description,omitempty"`
	Hash        string `json:"hash"`    // "sha256:<hex>" of the content
	Content     string `json:"content"` // the artifact holding it, "artifact:sha256:<hex>"
	Version     int    `json:"version"` // 1 for the first
	// Source says where the version came from: "import", "review" or
	// "api".
	Source string `json:"source"`
	// DraftAuthor and DraftOp name the approved draft when Source is
	// "review".
	DraftAuthor string `json:"draft_author,omitempty"`
	DraftOp     string `json:"draft_op,omitempty"`
}

// RemovedEvent is the payload of TypeRemoved.
type RemovedEvent struct {
	ID          string `json:"id"`
	Path        string `json:"path"`
	Version     int    `json:"version"` // the version that was current
	Source      string `json:"source"`
	DraftAuthor string `json:"draft_author,omitempty"`
}

// DraftedEvent is the payload of TypeDrafted; the author is the event's
// sender.
type DraftedEvent struct {
	Draft Draft `json:"draft"`
	// Session ties the draft to the work it came from.
	Session *SessionRef `json:"session,omitempty"`
}

// DiscardedEvent is the payload of TypeDiscarded; the author is the
// event's sender.
type DiscardedEvent struct {
	ID      string      `json:"id"` // the draft's id: the target's, or tmp-…
	Session *SessionRef `json:"session,omitempty"`
}

// DraftRejectedEvent is the payload of TypeDraftRejected; the reviewer is
// the event's sender.
type DraftRejectedEvent struct {
	ID     string `json:"id"`
	Author string `json:"author"`
	Reason string `json:"reason,omitempty"`
}

// SessionRef names the session an event came from.
type SessionRef struct {
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
	ThreadID  string `json:"thread_id"`
	TaskID    string `json:"task_id"`
}

// SetupEvent is the payload of TypeSetup.
type SetupEvent struct {
	SessionID   string `json:"session_id"`
	WorkspaceID string `json:"workspace_id"`
	MPFHash     string `json:"mpf_hash"`
	MPFChanged  bool   `json:"mpf_changed"` // the caller's known hash differed
}

// DiscoverEvent is the payload of TypeDiscover.
type DiscoverEvent struct {
	SessionID string   `json:"session_id"`
	Kind      string   `json:"kind,omitempty"`
	Group     string   `json:"group,omitempty"`
	Query     string   `json:"query,omitempty"`
	IDs       []string `json:"ids"` // what was listed
}

// LoadEvent is the payload of TypeLoad.
type LoadEvent struct {
	SessionID string       `json:"session_id"`
	Items     []LoadRecord `json:"items"`
}

// LoadRecord is one loaded document of a LoadEvent.
type LoadRecord struct {
	ID       string `json:"id"`
	Path     string `json:"path"`
	Hash     string `json:"hash"`
	Changed  bool   `json:"changed"`   // the caller's known hash differed: the content was sent
	HasDraft bool   `json:"has_draft"` // the caller has a draft of it
}

// ReferEvent is the payload of TypeRefer.
type ReferEvent struct {
	SessionID string        `json:"session_id"`
	Refs      []ReferRecord `json:"refs"`
}

// ReferRecord is one accepted reference of a ReferEvent.
type ReferRecord struct {
	RuleID       string `json:"rule_id"`
	Path         string `json:"path"`
	ConstraintID string `json:"constraint_id"`
	TextHash     string `json:"text_hash"`           // hash of the constraint's text
	Hash         string `json:"hash"`                // the rule's current hash
	RuleHash     string `json:"rule_hash,omitempty"` // the hash the agent gave
	Reason       string `json:"reason,omitempty"`
}

// ReportEvent is the payload of TypeReport.
type ReportEvent struct {
	SessionID string `json:"session_id"`
	Summary   string `json:"summary"`
}

// RejectEvent is the payload of TypeReject.
type RejectEvent struct {
	SessionID string `json:"session_id"`
	Reason    string `json:"reason,omitempty"`
}

// ArtifactEvent is the payload of TypeArtifact: an artifact command an
// agent ran, and the library event it produced.
type ArtifactEvent struct {
	SessionID string `json:"session_id"`
	Resource  string `json:"resource"`
	Op        string `json:"op"`
	ID        string `json:"id"` // the draft's id
	Path      string `json:"path,omitempty"`
	EventID   string `json:"event_id"` // the TypeDrafted or TypeDiscarded event
}

// RegisterSchemas registers the payload types of every event of the
// package with reg; types registered already are left as they are.
func RegisterSchemas(reg *schema.Registry) error {
	var errs []error
	add := func(err error) {
		if err != nil && !errors.Is(err, schema.ErrAlreadyRegistered) {
			errs = append(errs, err)
		}
	}
	add(schema.RegisterType[PublishedEvent](reg, PayloadPublished))
	add(schema.RegisterType[RemovedEvent](reg, PayloadRemoved))
	add(schema.RegisterType[DraftedEvent](reg, PayloadDrafted))
	add(schema.RegisterType[DiscardedEvent](reg, PayloadDiscarded))
	add(schema.RegisterType[DraftRejectedEvent](reg, PayloadDraftRejected))
	add(schema.RegisterType[SetupEvent](reg, PayloadSetup))
	add(schema.RegisterType[DiscoverEvent](reg, PayloadDiscover))
	add(schema.RegisterType[LoadEvent](reg, PayloadLoad))
	add(schema.RegisterType[ReferEvent](reg, PayloadRefer))
	add(schema.RegisterType[ReportEvent](reg, PayloadReport))
	add(schema.RegisterType[RejectEvent](reg, PayloadReject))
	add(schema.RegisterType[ArtifactEvent](reg, PayloadArtifact))
	return errors.Join(errs...)
}

// payloadOf maps an event type to its payload type.
var payloadOf = map[protocol.Type]string{
	TypePublished: PayloadPublished, TypeRemoved: PayloadRemoved, TypeDrafted: PayloadDrafted,
	TypeDiscarded: PayloadDiscarded, TypeDraftRejected: PayloadDraftRejected,
	TypeSetup: PayloadSetup, TypeDiscover: PayloadDiscover, TypeLoad: PayloadLoad, TypeRefer: PayloadRefer,
	TypeReport: PayloadReport, TypeReject: PayloadReject, TypeArtifact: PayloadArtifact,
}
