package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// Kind says what an id names: a run, a thread or a task.
type Kind uint8

// The kinds of id ownership is checked on.
const (
	KindRun Kind = iota + 1
	KindThread
	KindTask
)

// String is "run", "thread" or "task".
func (k Kind) String() string {
	switch k {
	case KindRun:
		return "run"
	case KindThread:
		return "thread"
	case KindTask:
		return "task"
	}
	return "id"
}

// Query is the store query of every event of the run, thread or task id.
func (k Kind) Query(id string) store.Query {
	switch k {
	case KindRun:
		return store.Query{RunID: id}
	case KindThread:
		return store.Query{ThreadID: id}
	}
	return store.Query{TaskID: id}
}

// firstEvent returns the first stored event of the run, thread or task
// id, nil when there is none.
func firstEvent(ctx context.Context, st store.Store, k Kind, id string) (*protocol.Message, error) {
	q := k.Query(id)
	q.Limit = 1
	for ev, err := range st.Read(ctx, q) {
		if err != nil {
			return nil, err
		}
		return ev.Message()
	}
	return nil, nil
}

// Owner returns the agent that owns the run, thread or task id in st, and
// false when nothing is stored under id (docs/protocol.md §6.7): the sender
// of its first event — for a task, the sender of its task.request, which
// the router stores before anything else of the task. The
// surfaces stamp that sender from the authenticated [Caller] when they
// create the run, thread or task, and [CheckWrite] keeps everybody else
// from adding to it, so the first sender is the creator.
func Owner(ctx context.Context, st store.Store, k Kind, id string) (owner string, ok bool, err error) {
	m, err := firstEvent(ctx, st, k, id)
	if err != nil || m == nil {
		return "", false, err
	}
	return m.From.AgentID, true, nil
}

// MayRead reports whether c may read the run, thread or task id: it
// exists, and c owns it or holds [ScopeReadAll] — for a task, also when c
// owns the task's run. A reserved id (protocol.Reserved) is readable
// with [ScopeAdmin] only. What c may not read is answered by the surfaces
// as what does not exist. A run removed by retention (store.Remover) gives
// its *store.RemovedError to a caller with [ScopeReadAll], and false to
// any other.
func MayRead(ctx context.Context, st store.Store, c *Caller, k Kind, id string) (bool, error) {
	if !c.MayRead() || id == "" || (protocol.Reserved(id) && !c.Has(ScopeAdmin)) {
		return false, nil
	}
	m, err := firstEvent(ctx, st, k, id)
	if errors.Is(err, store.ErrRemoved) && !c.Has(ScopeReadAll) {
		// A removed run's tombstone names no owner: only a reader of
		// everything learns what became of it; anyone else is told
		// nothing more than of an id that never was.
		return false, nil
	}
	if err != nil || m == nil {
		return false, err
	}
	if c.Has(ScopeReadAll) {
		return true, nil
	}
	return ownedBy(ctx, st, c, k, id, m)
}

// ownedBy reports whether c owns the id whose first event is m: c sent
// m, or, for a task, c sent the first event of the task's run (not a
// reserved one).
func ownedBy(ctx context.Context, st store.Store, c *Caller, k Kind, id string, m *protocol.Message) (bool, error) {
	if m.From.AgentID == c.AgentID {
		return true, nil
	}
	if k != KindTask || m.RunID == "" || protocol.Reserved(m.RunID) {
		return false, nil
	}
	run, err := firstEvent(ctx, st, KindRun, m.RunID)
	if err != nil || run == nil {
		return false, err
	}
	return run.From.AgentID == c.AgentID, nil
}

// CheckWrite returns nil when c may add m to the store through a surface
// (docs/protocol.md §6.7): c holds [ScopeSubmit], m is from c, no id of m
// is reserved, and each of m's run, thread and task that exists already
// belongs to c (or c holds [ScopeAdmin]); a task belongs to c also when
// c owns its run. m's parent task, when set, must exist and be readable
// by c ([MayRead]). A refusal for an id is [ErrNotFound] naming it, the
// same answer whether the id is missing or somebody else's, so the answer
// tells nothing about other callers' ids.
//
// A new id that the client named is claimed for c before CheckWrite
// returns: a claim record under the reserved run "run_clutch_claims",
// whose message id is a hash of the kind and the id, so of two callers
// that create the same id at once — in one process or many on one store
// — the store's dedup by message id keeps one claim and the other caller
// is refused. made lists the kinds of m's ids the surface made itself (a
// random id, or one from a [Deriver]): nobody else can know such an id
// before its first event lands, so a new one is not claimed, which saves
// an append. A kind left out of made is claimed when new, so forgetting
// one costs time, never safety.
func CheckWrite(ctx context.Context, st store.Store, c *Caller, m *protocol.Message, made ...Kind) error {
	if !c.Has(ScopeSubmit) {
		return coded.Wrap(ErrForbidden, "submitting needs the "+ScopeSubmit+" scope", nil)
	}
	if m.From.AgentID != c.AgentID {
		return coded.Wrap(ErrForbidden, "a caller writes as itself, "+c.AgentID, nil)
	}
	type target struct {
		k  Kind
		id string
	}
	var claims []*protocol.Message
	var claimed []target
	for _, t := range [...]target{{KindRun, m.RunID}, {KindThread, m.ThreadID}, {KindTask, m.TaskID}} {
		if t.id == "" {
			continue
		}
		if protocol.Reserved(t.id) {
			return notFound(t.k, t.id)
		}
		if c.Has(ScopeAdmin) {
			continue // anybody's: nothing to look up
		}
		first, err := firstEvent(ctx, st, t.k, t.id)
		if err != nil {
			return err
		}
		if first == nil {
			if slices.Contains(made, t.k) {
				continue // a new id the surface made: the caller creates it
			}
			// A new id the client named: whoever claimed it first owns it.
			claim, err := claimOf(ctx, st, t.k, t.id)
			if err != nil {
				return err
			}
			if claim == nil {
				claims, claimed = append(claims, newClaim(c, t.k, t.id)), append(claimed, t)
				continue
			}
			first = claim
		}
		ok, err := ownedBy(ctx, st, c, t.k, t.id, first)
		if err != nil {
			return err
		}
		if !ok {
			return notFound(t.k, t.id)
		}
	}
	if m.ParentTaskID != "" {
		ok, err := MayRead(ctx, st, c, KindTask, m.ParentTaskID)
		if err != nil {
			return err
		}
		if !ok {
			return notFound(KindTask, m.ParentTaskID)
		}
	}
	if len(claims) == 0 {
		return nil
	}
	res, err := st.Append(ctx, claims...)
	if err != nil {
		return err
	}
	for i, r := range res {
		if !r.Duplicate {
			continue
		}
		// Somebody claimed it between the look-up and the append.
		t := claimed[i]
		claim, err := claimOf(ctx, st, t.k, t.id)
		if err != nil {
			return err
		}
		if claim == nil || claim.From.AgentID != c.AgentID {
			return notFound(t.k, t.id)
		}
	}
	return nil
}

// The claims of client-named ids (CheckWrite).
const (
	claimRunID = "run_clutch_claims"
	claimType  = protocol.Type("x.clutch.claim")
)

// claimMessageID is the message id of the claim on the id of kind k.
func claimMessageID(k Kind, id string) string {
	sum := sha256.Sum256([]byte(k.String() + " " + id))
	return "msg_clutch_claim_" + runEncoding.EncodeToString(sum[:20])
}

// newClaim is c's claim on the id of kind k, its payload {"kind","id"}.
func newClaim(c *Caller, k Kind, id string) *protocol.Message {
	m := protocol.NewMessage(claimType, c.AgentID)
	m.ID, m.RunID, m.ThreadID, m.TaskID = claimMessageID(k, id), claimRunID, "thr_clutch_claims", "task_clutch_claims"
	m.Payload, _ = json.Marshal(map[string]string{"kind": k.String(), "id": id}) // strings only: cannot fail
	return m
}

// claimOf returns the stored claim on the id of kind k, nil when there is
// none.
func claimOf(ctx context.Context, st store.Store, k Kind, id string) (*protocol.Message, error) {
	ev, err := st.Get(ctx, claimMessageID(k, id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ev.Message()
}

func notFound(k Kind, id string) error {
	if len(id) > 80 {
		id = id[:80] + "…"
	}
	return coded.Wrap(ErrNotFound, "no "+k.String()+" "+id, nil)
}

// Deriver makes the ids a surface derives from a caller's own keys (an
// A2A messageId, an Idempotency-Key header, an MCP idempotency_key, an
// AG-UI runId), keyed with the store's secret so that nobody can compute
// another caller's id and create it first (docs/protocol.md §6.7). Build
// it with NewDeriver; it is safe for concurrent use.
type Deriver struct {
	st     store.Store
	mu     sync.Mutex
	secret []byte // nil until first read or made
}

// NewDeriver returns the Deriver of st's secret: 32 random bytes made on
// first use and kept in st under the reserved run "run_clutch_secret"
// (see protocol.Reserved), so every process on the store and every restart
// derives the same ids. Of two processes that make it at once, the store
// keeps the first (dedup by message id) and both use that one. Nothing is
// read or written until the first id is derived.
func NewDeriver(st store.Store) *Deriver { return &Deriver{st: st} }

// load returns the store's secret, reading or making it on first use; a
// failure is not remembered, so the next call tries again.
func (d *Deriver) load(ctx context.Context) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.secret != nil {
		return d.secret, nil
	}
	for range 2 {
		ev, err := d.st.Get(ctx, secretMessageID)
		if err == nil {
			m, err := ev.Message()
			if err != nil {
				return nil, err
			}
			var p struct {
				Secret []byte `json:"secret"`
			}
			if err := json.Unmarshal(m.Payload, &p); err != nil || len(p.Secret) < 16 {
				return nil, coded.Wrap(ErrInvalidConfig, "the store's secret ("+secretMessageID+") is malformed", err)
			}
			d.secret = p.Secret
			return d.secret, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, err
		}
		m := protocol.NewIDs(nil).NewMessage(secretType, secretFrom)
		m.ID, m.RunID, m.ThreadID, m.TaskID = secretMessageID, "run_clutch_secret", "thr_clutch_secret", "task_clutch_secret"
		if err := m.SetPayload(map[string]any{"secret": secret}); err != nil {
			return nil, err
		}
		res, err := d.st.Append(ctx, m)
		if err != nil {
			return nil, err
		}
		if !res[0].Duplicate {
			d.secret = secret
			return d.secret, nil
		}
	}
	return nil, coded.Wrap(ErrInvalidConfig, "the store's secret could not be read back", nil)
}

const (
	secretMessageID = "msg_clutch_secret"
	secretType      = protocol.Type("x.clutch.secret")
	secretFrom      = "agent:clutch"
)

// RunID is the run id a surface gives a task.request that carries a
// client's idempotency key: derived from the caller, the surface and the
// key, so that the same key sent again by the same caller lands in the
// same run with the same idempotency_key and the store's dedup (same
// run_id and idempotency_key, docs/protocol.md §5.2) answers it with the
// task the first one started, while the same key from another caller is
// another run. It is "run_" and 26 base32 characters of an HMAC-SHA256.
// The error is the store's, when the secret cannot be read or made.
func (d *Deriver) RunID(ctx context.Context, c *Caller, surface, key string) (string, error) {
	return d.ID(ctx, protocol.IDPrefixRun, c, surface, key)
}

// ID is RunID with another prefix, for threads and tasks
// (protocol.IDPrefixThread, protocol.IDPrefixTask) derived the same way.
func (d *Deriver) ID(ctx context.Context, prefix string, c *Caller, surface, key string) (string, error) {
	secret, err := d.load(ctx)
	if err != nil {
		return "", err
	}
	h := hmac.New(sha256.New, secret)
	for _, s := range [...]string{prefix, c.AgentID, surface, key} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	sum := h.Sum(nil)
	return prefix + runEncoding.EncodeToString(sum[:16])[:26], nil
}
