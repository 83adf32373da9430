package eino

import (
	"context"
	"sync"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// CheckpointMediaType is the media type of an eino checkpoint in the
// artifact store.
const CheckpointMediaType = "application/x-eino-checkpoint"

// CheckPointStore is an eino compose.CheckPointStore that keeps
// checkpoints in a Clutch store's artifact store (docs/protocol.md §8.2),
// content-addressed. Compile the graph with
// compose.WithCheckPointStore(cs) and give the Agent the same cs
// (Options.CheckPoints).
//
// In a run of the bridge, the ref of the checkpoint a graph stored when
// it was interrupted goes into the task's question (its details), so the
// graph resumes from it after the answer — in this process or another on
// the same store, after a restart too. Outside the bridge it is a plain
// CheckPointStore whose ids name their latest ref in memory.
type CheckPointStore struct {
	st   store.Store
	mu   sync.Mutex
	refs map[string]string // checkpoint id -> ref, for use outside the bridge
}

// NewCheckPointStore returns a CheckPointStore on st, the store of the
// router the agent is registered with (router.Router.Store).
func NewCheckPointStore(st store.Store) (*CheckPointStore, error) {
	if st == nil {
		return nil, optionsError("NewCheckPointStore needs a store")
	}
	return &CheckPointStore{st: st, refs: map[string]string{}}, nil
}

// Get returns the checkpoint id: in a run of the bridge, the one the task
// resumes from (none on a first attempt).
func (cs *CheckPointStore) Get(ctx context.Context, id string) ([]byte, bool, error) {
	if rn, ok := ctx.Value(runKey{}).(*run); ok {
		rn.mu.Lock()
		defer rn.mu.Unlock()
		return rn.checkpoint, rn.checkpoint != nil, nil
	}
	cs.mu.Lock()
	ref, ok := cs.refs[id]
	cs.mu.Unlock()
	if !ok {
		return nil, false, nil
	}
	data, err := cs.load(ctx, ref)
	return data, err == nil, err
}

// Set stores the checkpoint id as an artifact.
func (cs *CheckPointStore) Set(ctx context.Context, id string, data []byte) error {
	ref, err := cs.st.PutArtifact(ctx, CheckpointMediaType, data)
	if err != nil {
		return err
	}
	if rn, ok := ctx.Value(runKey{}).(*run); ok {
		rn.mu.Lock()
		rn.ref, rn.checkpoint = ref, data
		rn.mu.Unlock()
		return nil
	}
	cs.mu.Lock()
	cs.refs[id] = ref
	cs.mu.Unlock()
	return nil
}

// load reads the checkpoint stored under ref.
func (cs *CheckPointStore) load(ctx context.Context, ref string) ([]byte, error) {
	a, err := cs.st.GetArtifact(ctx, ref)
	if err != nil {
		return nil, router.Fail(protocol.CodeContextUnavailable, "reading the eino checkpoint "+ref+": "+err.Error(), true, map[string]any{"ref": ref})
	}
	return a.Data, nil
}
