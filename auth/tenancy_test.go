package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

func TestMain(m *testing.M) { os.Exit(backends.Main(m)) }

var (
	ken   = &auth.Caller{AgentID: "agent:ken", Scopes: []string{auth.ScopeSubmit}}
	eve   = &auth.Caller{AgentID: "agent:eve", Scopes: []string{auth.ScopeSubmit}}
	ops   = &auth.Caller{AgentID: "agent:ops", Scopes: []string{auth.ScopeReadAll}}
	root  = &auth.Caller{AgentID: "agent:root", Scopes: []string{auth.ScopeAdmin}}
	nobod = &auth.Caller{AgentID: "agent:nobody"}
)

// msg is a chat.message from from; a fifth argument is its parent task.
func msg(from, run, thread, task string, parent ...string) *protocol.Message {
	m := protocol.NewMessage(protocol.TypeChatMessage, from)
	m.RunID, m.ThreadID, m.TaskID = run, thread, task
	if len(parent) > 0 {
		m.ParentTaskID = parent[0]
	}
	return m
}

func appendAll(t *testing.T, st store.Store, ms ...*protocol.Message) {
	t.Helper()
	_, err := st.Append(context.Background(), ms...)
	require.NoError(t, err)
}

// TestCheckWrite: a second caller with only the submit scope cannot add
// to the first caller's run, thread or task, nor under a reserved id, and
// the refusal is the same as for an id that does not exist; the owner and
// an admin can. On every store.
func TestCheckWrite(t *testing.T) {
	for _, b := range backends.All() {
		t.Run(b.Name, func(t *testing.T) {
			st := b.New(t)
			ctx := t.Context()
			req := protocol.NewMessage(protocol.TypeTaskRequest, ken.AgentID)
			req.RunID, req.ThreadID, req.TaskID = "run_ken", "thr_ken", "task_ken"
			sub := protocol.NewMessage(protocol.TypeTaskRequest, "agent:worker")
			sub.RunID, sub.ThreadID, sub.TaskID, sub.ParentTaskID = "run_ken", "thr_ken", "task_sub", "task_ken"
			appendAll(t, st, req, sub)

			cases := []struct {
				name string
				c    *auth.Caller
				m    *protocol.Message
				err  error
			}{
				{"owner adds to its run", ken, msg(ken.AgentID, "run_ken", "thr_ken", "task_ken"), nil},
				{"owner writes to a subtask of its run", ken, msg(ken.AgentID, "run_ken", "thr_ken", "task_sub"), nil},
				{"new ids", eve, msg(eve.AgentID, "run_eve", "thr_eve", "task_eve"), nil},
				{"into another's run", eve, msg(eve.AgentID, "run_ken", "thr_eve", "task_eve"), auth.ErrNotFound},
				{"into another's thread", eve, msg(eve.AgentID, "run_eve", "thr_ken", "task_eve"), auth.ErrNotFound},
				{"into another's task", eve, msg(eve.AgentID, "run_eve", "thr_eve", "task_ken"), auth.ErrNotFound},
				{"into another's subtask", eve, msg(eve.AgentID, "run_eve", "thr_eve", "task_sub"), auth.ErrNotFound},
				{"read:all may not write", ops, msg(ops.AgentID, "run_ken", "", ""), auth.ErrForbidden},
				{"admin may", root, msg(root.AgentID, "run_ken", "thr_ken", "task_ken"), nil},
				{"no scope", nobod, msg(nobod.AgentID, "run_x", "", ""), auth.ErrForbidden},
				{"as somebody else", eve, msg(ken.AgentID, "run_x", "", ""), auth.ErrForbidden},
				{"registry run", eve, msg(eve.AgentID, "run_registry", "", ""), auth.ErrNotFound},
				{"reserved run", root, msg(root.AgentID, "run_clutch_nodes", "", ""), auth.ErrNotFound},
				{"reserved thread", eve, msg(eve.AgentID, "run_eve", "thread:rules:ws", ""), auth.ErrNotFound},
				{"webhook deliveries", eve, msg(eve.AgentID, "run:webhook:ops", "", ""), auth.ErrNotFound},
			}
			for _, tc := range cases {
				err := auth.CheckWrite(ctx, st, tc.c, tc.m)
				if tc.err == nil {
					assert.NoError(t, err, tc.name)
					continue
				}
				assert.ErrorIs(t, err, tc.err, tc.name)
			}

			// The parent of a request must be readable.
			child := msg(eve.AgentID, "run_eve", "", "task_eve")
			child.ParentTaskID = "task_ken"
			errTaken := auth.CheckWrite(ctx, st, eve, child)
			assert.ErrorIs(t, errTaken, auth.ErrNotFound)
			assert.NoError(t, auth.CheckWrite(ctx, st, ken, msg(ken.AgentID, "run_ken2", "", "task_ken2", "task_ken")))

			// No oracle: somebody else's id and a missing parent read alike.
			child.ParentTaskID = "task_missing"
			errMissing := auth.CheckWrite(ctx, st, eve, child)
			assert.Equal(t, strings.Replace(errTaken.Error(), "task_ken", "X", 1), strings.Replace(errMissing.Error(), "task_missing", "X", 1))

			// The new ids a caller named are its own from the check on, before
			// anything is stored under them.
			assert.ErrorIs(t, auth.CheckWrite(ctx, st, eve, msg(eve.AgentID, "run_ken2", "", "")), auth.ErrNotFound)
			assert.ErrorIs(t, auth.CheckWrite(ctx, st, ken, msg(ken.AgentID, "", "thr_eve", "")), auth.ErrNotFound)
			assert.NoError(t, auth.CheckWrite(ctx, st, eve, msg(eve.AgentID, "run_eve", "thr_eve", "task_eve")))
		})
	}
}

// TestConcurrentCreation: callers that create the same new id at once —
// two Checks racing on one store — end with exactly one owner; every
// other caller is refused, so nothing of theirs lands under it. On every
// store, 20 rounds of 8 callers released together.
func TestConcurrentCreation(t *testing.T) {
	for _, b := range backends.All() {
		t.Run(b.Name, func(t *testing.T) {
			st := b.New(t)
			ctx := t.Context()
			const n = 8
			callers := make([]*auth.Caller, n)
			for i := range callers {
				callers[i] = &auth.Caller{AgentID: fmt.Sprintf("agent:c%d", i), Scopes: []string{auth.ScopeSubmit}}
			}
			for round := range 20 {
				run := fmt.Sprintf("run_contested%d", round)
				start := make(chan struct{})
				errs := make(chan error, n)
				var wg sync.WaitGroup
				for _, c := range callers {
					wg.Go(func() {
						<-start
						errs <- auth.CheckWrite(ctx, st, c, msg(c.AgentID, run, "", ""))
					})
				}
				close(start)
				wg.Wait()
				close(errs)
				won := 0
				for err := range errs {
					if err == nil {
						won++
						continue
					}
					require.ErrorIs(t, err, auth.ErrNotFound)
				}
				require.Equal(t, 1, won, "round %d: exactly one caller creates %s", round, run)
			}
		})
	}
}

// TestMayRead: owners read their own, read:all reads everybody's, only
// admins read reserved runs; a task is readable through its run.
func TestMayRead(t *testing.T) {
	for _, b := range backends.All() {
		t.Run(b.Name, func(t *testing.T) {
			st := b.New(t)
			ctx := t.Context()
			req := protocol.NewMessage(protocol.TypeTaskRequest, ken.AgentID)
			req.RunID, req.ThreadID, req.TaskID = "run_ken", "thr_ken", "task_ken"
			sub := protocol.NewMessage(protocol.TypeTaskRequest, "agent:worker")
			sub.RunID, sub.ThreadID, sub.TaskID = "run_ken", "thr_ken", "task_sub"
			sys := msg("agent:clutch", "run_registry", "thr_registry", "task_registry")
			appendAll(t, st, req, sub, sys)
			for _, tc := range []struct {
				c    *auth.Caller
				k    auth.Kind
				id   string
				want bool
			}{
				{ken, auth.KindRun, "run_ken", true},
				{ken, auth.KindThread, "thr_ken", true},
				{ken, auth.KindTask, "task_sub", true},
				{eve, auth.KindRun, "run_ken", false},
				{eve, auth.KindTask, "task_sub", false},
				{eve, auth.KindRun, "run_missing", false},
				{ops, auth.KindRun, "run_ken", true},
				{ops, auth.KindRun, "run_registry", false},
				{root, auth.KindRun, "run_registry", true},
				{nobod, auth.KindRun, "run_ken", false},
			} {
				ok, err := auth.MayRead(ctx, st, tc.c, tc.k, tc.id)
				require.NoError(t, err)
				assert.Equal(t, tc.want, ok, "%s reads %s %s", tc.c.AgentID, tc.k, tc.id)
			}
			owner, ok, err := auth.Owner(ctx, st, auth.KindTask, "task_sub")
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Equal(t, "agent:worker", owner)
		})
	}
}

// TestDeriver: derived ids are stable for one store, differ per caller,
// surface, key and prefix, and differ between stores (another secret), so
// knowing the inputs is not enough to compute them; processes that make
// the secret at once agree on one.
func TestDeriver(t *testing.T) {
	for _, b := range backends.All() {
		t.Run(b.Name, func(t *testing.T) {
			st := b.New(t)
			ctx := t.Context()
			run := func(d *auth.Deriver, c *auth.Caller, surface, key string) string {
				id, err := d.RunID(ctx, c, surface, key)
				require.NoError(t, err)
				return id
			}
			var (
				wg sync.WaitGroup
				ds [8]*auth.Deriver
				as [8]string
			)
			for i := range ds {
				ds[i] = auth.NewDeriver(st)
				wg.Go(func() {
					id, err := ds[i].RunID(ctx, ken, "a2a", "m-1")
					assert.NoError(t, err)
					as[i] = id
				})
			}
			wg.Wait()
			d := ds[0]
			a := as[0]
			for _, o := range as {
				require.Equal(t, a, o, "one secret per store")
			}
			assert.Equal(t, a, run(auth.NewDeriver(st), ken, "a2a", "m-1"), "read back")
			assert.Len(t, a, len("run_")+26)
			assert.True(t, strings.HasPrefix(a, "run_"))
			thr, err := d.ID(ctx, protocol.IDPrefixThread, ken, "a2a", "m-1")
			require.NoError(t, err)
			for _, other := range []string{run(d, eve, "a2a", "m-1"), run(d, ken, "http", "m-1"), run(d, ken, "a2a", "m-2"),
				run(d, &auth.Caller{AgentID: "agent:kena"}, "2a", "m-1"), strings.Replace(thr, "thr_", "run_", 1)} {
				assert.NotEqual(t, a, other)
			}
			m := protocol.NewMessage(protocol.TypeTaskRequest, ken.AgentID)
			m.RunID = a
			require.NoError(t, m.Validate())

			assert.NotEqual(t, a, run(auth.NewDeriver(backends.All()[0].New(t)), ken, "a2a", "m-1"), "another store, another secret")

			ok, err := auth.MayRead(ctx, st, ops, auth.KindRun, "run_clutch_secret")
			require.NoError(t, err)
			assert.False(t, ok, "the secret is in a reserved run")
		})
	}
}

func TestScopesValidated(t *testing.T) {
	_, err := auth.APIKeys(map[string]auth.Caller{"k-1234567890abcdef": {AgentID: "agent:ken", Scopes: []string{"read_all"}}})
	require.Error(t, err)
	assert.True(t, errors.Is(err, auth.ErrInvalidConfig))
	assert.Contains(t, err.Error(), `"read_all"`)
	assert.Contains(t, err.Error(), "read:all")
}

func TestReserved(t *testing.T) {
	for id, want := range map[string]bool{
		"run_registry": true, "thr_registry": true, "run_clutch_nodes": true, "run:clutch:x": true,
		"run:rules:ws": true, "thread:rules:ws": true, "task:rules:ws": true, "run:webhook:ops": true,
		"run_01J0000000000000000000000": false, "run:pipe001": false, "run:clutchy": false, "thread:webhook:x": false,
		"run_clutchx": false, "task_clutch_secret": true, "": false,
	} {
		assert.Equal(t, want, protocol.Reserved(id), id)
	}
}

// TestInFlightPerCaller: one caller holding requests open cannot take the
// surface's whole MaxInFlight; another caller is still admitted.
func TestInFlightPerCaller(t *testing.T) {
	keys, err := auth.APIKeys(map[string]auth.Caller{
		"key-eve-0123456789": {AgentID: "agent:eve", Scopes: []string{auth.ScopeSubmit}},
		"key-ken-0123456789": {AgentID: "agent:ken", Scopes: []string{auth.ScopeSubmit}},
	})
	require.NoError(t, err)
	g, err := auth.NewGuard(keys, &auth.Options{MaxInFlight: 16})
	require.NoError(t, err)
	req := func(key string) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", key)
		return r
	}
	var held []func()
	for range 4 { // a quarter of 16
		_, release, err := g.Admit(req("key-eve-0123456789"))
		require.NoError(t, err)
		held = append(held, release)
	}
	_, _, err = g.Admit(req("key-eve-0123456789"))
	require.ErrorIs(t, err, auth.ErrCapacity, "eve is at her own limit")
	_, release, err := g.Admit(req("key-ken-0123456789"))
	require.NoError(t, err, "ken is still served")
	release()
	held[0]()
	held[0]() // idempotent
	_, release, err = g.Admit(req("key-eve-0123456789"))
	require.NoError(t, err, "a slot came back")
	release()
	for _, r := range held[1:] {
		r()
	}
	_, err = auth.NewGuard(keys, &auth.Options{MaxInFlight: 16, MaxInFlightPerCaller: -1})
	require.NoError(t, err, "negative: none")
}

// TestMayReadRemoved: a run removed by retention is reported as removed
// to a reader of everything, and as an unknown id to anyone else, its
// owner included (the tombstone names no owner). On every store.
func TestMayReadRemoved(t *testing.T) {
	for _, b := range backends.All() {
		t.Run(b.Name, func(t *testing.T) {
			st := b.New(t)
			ctx := t.Context()
			req := protocol.NewMessage(protocol.TypeTaskRequest, ken.AgentID)
			req.RunID, req.ThreadID, req.TaskID = "run_gone", "thr_gone", "task_gone"
			res := protocol.NewMessage(protocol.TypeTaskResult, "agent:worker")
			res.RunID, res.ThreadID, res.TaskID = "run_gone", "thr_gone", "task_gone"
			appendAll(t, st, req, res)
			rm := store.RemoverOf(st)
			require.NotNil(t, rm)
			_, err := rm.RemoveRuns(ctx, []string{"run_gone"}, store.Removal{Policy: "max_age=1h0m0s"})
			require.NoError(t, err)

			for _, c := range []*auth.Caller{ops, root} {
				ok, err := auth.MayRead(ctx, st, c, auth.KindRun, "run_gone")
				assert.False(t, ok)
				assert.ErrorIs(t, err, store.ErrRemoved, c.AgentID)
				var re *store.RemovedError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, map[string]any{"removed": re.Tombstone}, re.ErrorDetails())
				assert.Contains(t, err.Error(), `run "run_gone" was removed at `)
			}
			for _, c := range []*auth.Caller{ken, eve} {
				ok, err := auth.MayRead(ctx, st, c, auth.KindRun, "run_gone")
				assert.False(t, ok, c.AgentID)
				assert.NoError(t, err, c.AgentID)
			}
		})
	}
}
