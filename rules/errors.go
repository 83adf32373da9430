package rules

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Match them with errors.Is; each also
// carries a protocol.Code (protocol.CodeOf). The messages of the ones an
// agent meets through the tools are the phrases of docs/protocol.md §15.10.
var (
	// ErrInvalidParams: a call's arguments break a rule of its input
	// (memsetup without knownHashes["META_PROMPT.md"], memload without a
	// knownHashes entry for a requested id, an empty summary, ...).
	ErrInvalidParams error = coded.New("invalid params", protocol.CodeInvalidField)
	// ErrUnknownID: memload was given an id that names no document, and no
	// draft of the caller.
	ErrUnknownID error = coded.New("Unknown rule id", protocol.CodeNotFound)
	// ErrUnknownRule: memref named a rule or workflow that does not exist
	// (or a context document); see ReferError.
	ErrUnknownRule error = coded.New("unknown rule or workflow", protocol.CodeNotFound)
	// ErrUnknownConstraint: memref named a constraint its rule does not
	// have; see ReferError.
	ErrUnknownConstraint error = coded.New("unknown constraint", protocol.CodeInvalidField)
	// ErrUnsafePath: a path is absolute, climbs out of the workspace,
	// is not clean, is not a .md file or holds characters a file name
	// must not.
	ErrUnsafePath error = coded.New("unsafe path", protocol.CodeInvalidField)
	// ErrNotFound: an artifact command's target does not exist.
	ErrNotFound error = coded.New("file not found in cache", protocol.CodeNotFound)
	// ErrIncompatibleDraft: the target already has a draft of another
	// kind (an update over a rename, say).
	ErrIncompatibleDraft error = coded.New("artifact already has an incompatible local change", protocol.CodeConflict)
	// ErrDraftExists: a create collides with an existing draft.
	ErrDraftExists error = coded.New("draft already exists", protocol.CodeConflict)
	// ErrPathTaken: a create or rename names the path of an existing
	// document.
	ErrPathTaken error = coded.New("path already exists", protocol.CodeConflict)
	// ErrNoDraft: discard, Approve or RejectDraft named no draft.
	ErrNoDraft error = coded.New("no such draft", protocol.CodeNotFound)
	// ErrConflict: a draft cannot be approved because the document changed
	// under it (its base hash is not the current hash) or its path was
	// taken meanwhile.
	ErrConflict error = coded.New("draft conflicts with the current library", protocol.CodeConflict)
	// ErrInvalidCommand: an artifact command is not well formed.
	ErrInvalidCommand error = coded.New("invalid artifact command", protocol.CodeInvalidField)
	// ErrTooLarge: a document is over MaxDocumentSize.
	ErrTooLarge error = coded.New("document too large", protocol.CodeTooLarge)
	// ErrReadOnly: the library was opened as of an earlier point of the
	// log (Options.AsOf) and cannot change.
	ErrReadOnly error = coded.New("library opened read-only", protocol.CodeConflict)
	// ErrMissingReferences: a result was refused by a Policy because the
	// agent did not refer to the rules it requires (code VALIDATION).
	ErrMissingReferences error = coded.New("result refused: required rule references are missing", protocol.CodeValidation)
)

// Retryable error codes and actions of memref (docs/protocol.md §15.8).
const (
	CodeUnknownRuleOrWorkflow = "unknown_rule_or_workflow"
	CodeUnknownConstraint     = "unknown_constraint"
	ActionRediscover          = "rediscover_and_reload"
	ActionRetryConstraint     = "retry_with_valid_constraint"
)

// ReferError is the retryable error of a refused reference
// (docs/protocol.md §15.8). It matches ErrUnknownRule or
// ErrUnknownConstraint.
type ReferError struct {
	Message     string // the whole message, for the agent
	Code        string // CodeUnknownRuleOrWorkflow or CodeUnknownConstraint
	RetryAction string // ActionRediscover or ActionRetryConstraint
	// ValidConstraints are the rule's constraints (id, name, text), for an
	// unknown constraint.
	ValidConstraints []ValidConstraint
}

// ValidConstraint is a candidate offered by a ReferError.
type ValidConstraint struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Text string `json:"text"`
}

// Error returns the message.
func (e *ReferError) Error() string { return e.Message }

// Unwrap returns the sentinel the error matches.
func (e *ReferError) Unwrap() error {
	if e.Code == CodeUnknownConstraint {
		return ErrUnknownConstraint
	}
	return ErrUnknownRule
}

func wrap(sentinel error, detail string) error { return coded.Wrap(sentinel, detail, nil) }
