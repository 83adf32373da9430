package registry

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// Liveness as state (docs/protocol.md §2.4): over a store with
// store.Presence, a heartbeat is a beat of the key "<RunID>/<agent id>",
// whose data is the registry clock's time (RFC 3339), and only changes
// are events. See "Events" in the package doc.

// TypeOffline is the extension type of the event that says an agent went
// offline: its last sign of life is older than the HeartbeatTTL. Payload
// {"agent_id", "last_seen"}; idempotency key
// "clutch.offline/<agent id>/<last_seen, unix nanoseconds>", so the
// processes that notice the same lapse store it once.
const TypeOffline protocol.Type = "x.clutch.agent.offline"

type offlinePayload struct {
	AgentID  string    `json:"agent_id"`
	LastSeen time.Time `json:"last_seen"`
}

func (r *Registry) beatKey(agentID string) string { return r.opts.RunID + "/" + agentID }

// storeMax raises v to t (unix nanoseconds).
func storeMax(v *atomic.Int64, t int64) {
	for {
		old := v.Load()
		if t <= old || v.CompareAndSwap(old, t) {
			return
		}
	}
}

// beatTime is the registry time a beat carries, or its store time when
// its data is not one.
func beatTime(b store.Beat) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, string(b.Data)); err == nil {
		return t
	}
	return b.Time
}

// beat records a beat of agentID in the store's Presence and stores the
// change it makes, if any: the agent comes online (its first beat, or one
// after its last went stale) with an agent.heartbeat, after the
// TypeOffline of the lapse. Both carry idempotency keys made of the beat
// replaced, so that processes beating for one agent store each change
// once. quiet beats without storing a change: a register or update is one
// already.
func (r *Registry) beat(ctx context.Context, agentID string, quiet bool) error {
	now := r.opts.IDs.Now()
	_, prev, err := r.pres.Beat(ctx, r.beatKey(agentID), []byte(now.UTC().Format(time.RFC3339Nano)))
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	if a, ok := r.Get(agentID); ok && !a.gone {
		storeMax(&a.lastSeen, now.UnixNano())
	}
	if quiet {
		return nil
	}
	var last time.Time
	if !prev.Time.IsZero() {
		last = beatTime(prev)
		if now.Sub(last) <= r.opts.HeartbeatTTL {
			return nil // still online: no change, no event
		}
	}
	var msgs []*protocol.Message
	stamp := "0"
	if !last.IsZero() {
		stamp = strconv.FormatInt(last.UnixNano(), 10)
		off, err := r.offlineEvent(agentID, last)
		if err != nil {
			return wrap(ErrNotFound, agentID, nil)
		}
		msgs = append(msgs, off)
	}
	on, err := r.event(protocol.TypeAgentHeartbeat, agentID, map[string]string{"status": "ok"})
	if err != nil {
		return wrap(ErrNotFound, agentID, nil)
	}
	on.IdempotencyKey = "clutch.online/" + agentID + "/" + stamp
	msgs = append(msgs, on)
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return r.writeChanges(ctx, agentID, msgs)
}

func (r *Registry) offlineEvent(agentID string, last time.Time) (*protocol.Message, error) {
	m, err := r.event(TypeOffline, agentID, offlinePayload{AgentID: agentID, LastSeen: last.UTC()})
	if err != nil {
		return nil, err
	}
	m.IdempotencyKey = "clutch.offline/" + agentID + "/" + strconv.FormatInt(last.UnixNano(), 10)
	return m, nil
}

// writeChanges appends the change events msgs of agentID, which must be
// registered, and applies those the store took; one another process
// stored already (a duplicate by idempotency key) is applied here from
// this copy, which says the same. r.wmu is held.
func (r *Registry) writeChanges(ctx context.Context, agentID string, msgs []*protocol.Message) error {
	if _, ok := r.Get(agentID); !ok {
		return wrap(ErrNotFound, agentID, nil)
	}
	res, err := r.st.Append(ctx, msgs...)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	for i, m := range msgs {
		if res[i].Duplicate && res[i].DuplicateBy == store.DedupByID {
			return wrap(ErrDuplicateEvent, fmt.Sprintf("%s is seq %d", m.ID, res[i].Seq), nil)
		}
		if !res[i].Duplicate && r.own != nil {
			r.own[res[i].Seq] = struct{}{}
		}
		if err := r.apply(m, nil, eventTime(m, r.opts.IDs.Now()), false); err != nil {
			return err
		}
	}
	return nil
}

// refresh raises each agent's last-seen time to its latest beat, so that
// the registry sees the beats of other processes (and of the process
// before a restart). Agents Local to an earlier process stay offline.
func (r *Registry) refresh(ctx context.Context) error {
	prefix := r.opts.RunID + "/"
	for b, err := range r.pres.Beats(ctx, prefix) {
		if err != nil {
			return fmt.Errorf("registry: beats: %w", err)
		}
		if a, ok := r.Get(strings.TrimPrefix(b.Key, prefix)); ok && !a.gone {
			storeMax(&a.lastSeen, beatTime(b).UnixNano())
		}
	}
	return nil
}

// RecordOffline stores a TypeOffline event for each agent that went
// offline (neither Local nor online, its last sign of life older than
// the HeartbeatTTL) and has none for that lapse yet, and returns how many
// this call stored. Over a store with Presence it first reads the beats,
// so it sees those of every process. The idempotency key makes the event
// of one lapse stored once, whichever processes call it; a Shared
// registry calls it from Follow, and a beat after a lapse stores the
// lapse's event too when no one did.
func (r *Registry) RecordOffline(ctx context.Context) (int, error) {
	if r.pres != nil {
		if err := r.refresh(ctx); err != nil {
			return 0, err
		}
	}
	n := 0
	for _, a := range r.List() {
		last := a.lastSeen.Load()
		if a.local || last == 0 || a.offline.Load() == last || r.Online(a) {
			continue
		}
		m, err := r.offlineEvent(a.ID(), time.Unix(0, last))
		if err != nil {
			continue // an id the envelope refuses has no events to begin with
		}
		r.wmu.Lock()
		res, err := r.st.Append(ctx, m)
		if err == nil && !res[0].Duplicate {
			n++
			if r.own != nil {
				r.own[res[0].Seq] = struct{}{}
			}
		}
		r.wmu.Unlock()
		if err != nil {
			return n, fmt.Errorf("registry: %w", err)
		}
		a.offline.Store(last)
	}
	return n, nil
}

// applyOffline records, for the agent of an offline event, the lapse it
// covers, so that RecordOffline does not store it again.
func (r *Registry) applyOffline(m *protocol.Message) {
	p, err := protocol.DecodePayload[offlinePayload](m)
	if err != nil || p.LastSeen.IsZero() {
		return
	}
	if a, ok := r.Get(m.From.AgentID); ok {
		a.offline.Store(p.LastSeen.UnixNano())
	}
}
