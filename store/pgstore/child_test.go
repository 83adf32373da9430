package pgstore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/pgstore"
)

// The multi-process tests re-execute the test binary with roleEnv set:
// TestMain then runs child instead of the tests. The parent passes the
// DSN, the schema and the role's parameters in the environment.
const (
	roleEnv   = "PGSTORE_TEST_ROLE"
	dsnEnv    = "PGSTORE_TEST_DSN"
	schemaEnv = "PGSTORE_TEST_SCHEMA"
	argEnv    = "PGSTORE_TEST_ARGS" // JSON of childArgs
)

type childArgs struct {
	Index   int    // the process's number among its role
	Own     int    // appender: messages of its own
	Shared  int    // appender: messages every appender appends (same ids)
	Keyed   int    // appender: messages with their own ids but shared (run, idempotency key)
	Workers int    // appender: goroutines
	Total   int    // follower: events to read
	Prefix  string // follower: type prefix to follow ("" for all)
	Seed    uint64 // the test's random seed
}

// childCmd returns the command that runs role in a new process.
func childCmd(ctx context.Context, role, dsn, schema string, a childArgs) *exec.Cmd {
	b, _ := json.Marshal(a)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+role, dsnEnv+"="+dsn, schemaEnv+"="+schema, argEnv+"="+string(b))
	return cmd
}

func child(role string) int {
	var a childArgs
	if err := json.Unmarshal([]byte(os.Getenv(argEnv)), &a); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := pgstore.Open(ctx, os.Getenv(dsnEnv), &pgstore.Options{Schema: os.Getenv(schemaEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		return 2
	}
	defer s.Close()
	switch role {
	case "appender":
		err = appender(ctx, s, a)
	case "follower":
		err = followerChild(ctx, s, a)
	case "latency":
		err = latencyChild(ctx, s, a)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "child %s %d: %v\n", role, a.Index, err)
		return 1
	}
	return 0
}

func stdout() *os.File { return os.Stdout }

var stressBase = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// stressMessages returns the messages of appender index: its own, then
// the shared ones (the same ids in every process), then the keyed ones
// (ids of its own, (run_id, idempotency_key) shared).
func stressMessages(a childArgs) (own, shared, keyed []*protocol.Message) {
	gen := func(seed uint64) *protocol.IDs {
		var tick int64
		var mu sync.Mutex
		return protocol.NewIDs(&protocol.IDOptions{
			Clock: func() time.Time {
				mu.Lock()
				defer mu.Unlock()
				tick++
				return stressBase.Add(time.Duration(tick) * time.Millisecond)
			},
			Entropy: rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), 7}),
		})
	}
	mk := func(ids *protocol.IDs, run string, typ protocol.Type) *protocol.Message {
		m := ids.NewMessage(typ, "agent:stress")
		m.RunID = run
		m.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
		m.Payload = json.RawMessage(`{"note":"` + m.ID + `"}`)
		return m
	}
	types := []protocol.Type{protocol.TypeTaskProgress, protocol.TypeChatMessage, protocol.TypeToolCall}
	ids := gen(a.Seed*1000 + uint64(a.Index) + 1)
	run := ids.RunID()
	for i := range a.Own {
		own = append(own, mk(ids, run, types[i%len(types)]))
	}
	common := gen(a.Seed*1000 + 999)
	crun := common.RunID()
	for range a.Shared {
		shared = append(shared, mk(common, crun, protocol.TypeTaskProgress))
	}
	for i := range a.Keyed {
		m := mk(ids, crun, protocol.TypeChatMessage)
		m.IdempotencyKey = "stress-key-" + strconv.Itoa(i)
		keyed = append(keyed, m)
	}
	return own, shared, keyed
}

// appender appends its messages from a.Workers goroutines in batches of
// 1 to 4, then checks that each result points at an event with the
// message's id (or, for a duplicate by key, its run and key).
func appender(ctx context.Context, s *pgstore.Store, a childArgs) error {
	own, shared, keyed := stressMessages(a)
	all := append(append(own, shared...), keyed...)
	r := rand.New(rand.NewPCG(a.Seed, uint64(a.Index)))
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	type res struct {
		m *protocol.Message
		r store.AppendResult
	}
	var mu sync.Mutex
	var results []res
	work := make(chan []*protocol.Message)
	var wg sync.WaitGroup
	errs := make(chan error, a.Workers)
	for range a.Workers {
		wg.Go(func() {
			for batch := range work {
				rs, err := s.Append(ctx, batch...)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for i, x := range rs {
					results = append(results, res{batch[i], x})
				}
				mu.Unlock()
			}
		})
	}
	for i := 0; i < len(all); {
		k := min(1+r.IntN(4), len(all)-i)
		select {
		case work <- all[i : i+k]:
		case err := <-errs:
			close(work)
			wg.Wait()
			return err
		}
		i += k
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	for _, x := range results {
		var got *protocol.Message
		for ev, err := range s.Read(ctx, store.Query{AfterSeq: x.r.Seq - 1, Limit: 1}) {
			if err != nil {
				return err
			}
			if got, err = ev.Message(); err != nil {
				return err
			}
		}
		switch {
		case got == nil:
			return fmt.Errorf("result %+v of %s: no event at that seq", x.r, x.m.ID)
		case x.r.DuplicateBy == store.DedupByIdempotencyKey:
			if got.RunID != x.m.RunID || got.IdempotencyKey != x.m.IdempotencyKey {
				return fmt.Errorf("result %+v of %s: event %s has another run or key", x.r, x.m.ID, got.ID)
			}
		case got.ID != x.m.ID:
			return fmt.Errorf("result %+v of %s: event has id %s", x.r, x.m.ID, got.ID)
		}
	}
	return nil
}

// followerChild follows the log until it has a.Total events (or, with a
// prefix, until the last seq of the log it was told), checking that seqs
// increase (by exactly one when it follows everything) and that no id
// comes twice. It prints "ok <count> <last seq>".
func followerChild(ctx context.Context, s *pgstore.Store, a childArgs) error {
	seen := map[string]bool{}
	var last uint64
	n := 0
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	fmt.Fprintln(out, "ready")
	out.Flush()
	for ev, err := range s.Follow(ctx, store.Query{TypePrefix: a.Prefix}) {
		if err != nil {
			return err
		}
		if a.Prefix == "" && ev.Seq != last+1 {
			return fmt.Errorf("gap or reorder: seq %d after %d", ev.Seq, last)
		}
		if ev.Seq <= last {
			return fmt.Errorf("reorder: seq %d after %d", ev.Seq, last)
		}
		m, err := ev.Message()
		if err != nil {
			return err
		}
		if seen[m.ID] {
			return fmt.Errorf("id %s yielded twice", m.ID)
		}
		seen[m.ID] = true
		last = ev.Seq
		n++
		if a.Prefix == "" && n == a.Total {
			break
		}
		if a.Prefix != "" && ev.Seq >= uint64(a.Total) {
			break
		}
	}
	fmt.Fprintf(out, "ok %d %d\n", n, last)
	return nil
}
