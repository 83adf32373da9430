package registry

import (
	"context"
	"fmt"
	"time"

	"github.com/clutchprotocol/clutch/store"
)

// Follow keeps the registry current with a store shared by several
// processes: it follows the store from the last registry event the
// registry has applied and applies every registry event another registry
// appended (this registry's own writes are applied already, and skipped),
// in seq order, until ctx ends; then it returns nil. onChange, when not
// nil, is called after each applied event with the agent id it concerns.
// A store error other than ctx's ends it with that error. Run one Follow
// per registry, on a registry opened with Options.Shared.
//
// Events of other processes count for liveness from their ts, like
// replayed ones, and an agent another process registered Local is online
// while its heartbeats keep coming (Options.Shared).
func (r *Registry) Follow(ctx context.Context, onChange func(agentID string)) error {
	if !r.opts.Shared {
		return wrap(ErrInvalidOptions, "Follow needs a registry opened with Options.Shared", nil)
	}
	r.wmu.Lock()
	from := r.synced
	r.wmu.Unlock()
	if r.pres != nil {
		ctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.poll(ctx)
		}()
		defer func() { stop(); <-done }()
	}
	for ev, err := range r.st.Follow(ctx, store.Query{RunID: r.opts.RunID, AfterSeq: from}) {
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("registry: follow: %w", err)
		}
		id, err := r.applyFollowed(ev)
		if err != nil {
			return err
		}
		if id != "" && onChange != nil {
			onChange(id)
		}
	}
	return nil
}

// poll reads the beats of every process and stores the offline events
// of the lapses it sees (RecordOffline), every PollInterval, until ctx
// ends.
func (r *Registry) poll(ctx context.Context) {
	t := time.NewTicker(r.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// A failure is the store's: Follow reports it, and the next tick
		// tries again.
		_, _ = r.RecordOffline(ctx)
	}
}

// applyFollowed applies one followed event unless this registry wrote it.
// It runs under the writers' lock: a write that appended the event but
// has not recorded its seq yet is waited for.
func (r *Registry) applyFollowed(ev store.Event) (string, error) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if ev.Seq <= r.synced {
		return "", nil
	}
	r.synced = ev.Seq
	if _, ok := r.own[ev.Seq]; ok {
		delete(r.own, ev.Seq)
		return "", nil
	}
	m, err := ev.Message()
	if err != nil {
		return "", &CorruptEventError{Seq: ev.Seq, Err: err}
	}
	if err := r.apply(m, nil, eventTime(m, ev.Time), true); err != nil {
		return "", &CorruptEventError{Seq: ev.Seq, Err: err}
	}
	return m.From.AgentID, nil
}

// Shared reports whether the registry was opened with Options.Shared.
func (r *Registry) Shared() bool { return r.opts.Shared }
