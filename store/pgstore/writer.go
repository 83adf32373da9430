package pgstore

import (
	"context"
	"strconv"
	"time"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// request is one Append call on its way to the writer.
type request struct {
	ctx     context.Context // the Append call's; checked before the commit
	entries []driver.Entry
	res     []store.AppendResult
	err     error
	done    chan struct{} // closed when res or err is set
	cond    bool          // AppendIfNew: nothing is stored when the first entry is a duplicate
}

// writer is the goroutine that commits this Store's appends. It takes
// every request waiting in the queue (up to Options.MaxBatch events) into
// one transaction, then acknowledges each; requests that arrive meanwhile
// form the next group.
//
// After a group of more than one it gathers: it lets the callers just
// acknowledged come back before it commits again (without that,
// synchronous appenders settle into two cohorts that alternate, each
// group holding half of them). It takes requests as they arrive until as
// many wait as the last group held, or until a quarter of the last
// commit's duration (never more than maxGather) has passed since that
// commit. It sleeps meanwhile, woken by each arrival: a store whose
// writer spun here took the CPU from the callers it waited for, and from
// the database on the same machine. After a group of one it never waits,
// so a lone appender pays nothing.
func (s *Store) writer() {
	defer close(s.wdone)
	var batch []*request
	var lastGroup int
	var lastCommit time.Duration
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var deadline time.Time
		if lastGroup > 1 {
			deadline = time.Now().Add(min(lastCommit/4, maxGather))
		}
		r, ok := <-s.reqs
		if !ok {
			return
		}
		batch = append(batch[:0], r)
		n := len(r.entries)
	gather:
		for n < s.opts.MaxBatch {
			var more bool
			select {
			case r, more = <-s.reqs:
			default:
				wait := time.Until(deadline)
				if len(batch) >= lastGroup || wait <= 0 {
					break gather
				}
				timer.Reset(wait)
				select {
				case r, more = <-s.reqs:
					timer.Stop()
				case <-timer.C:
					break gather
				}
			}
			if !more {
				break gather // closed: commit what was taken, then end
			}
			batch = append(batch, r)
			n += len(r.entries)
		}
		lastGroup = len(batch)
		t := time.Now()
		s.commit(batch)
		lastCommit = time.Since(t)
		clear(batch)
	}
}

// maxGather caps gather's wait.
const maxGather = 2 * time.Millisecond

// commit appends a group in one transaction of two round trips:
//
//  1. BEGIN; lock the head row (this waits for the append in flight in
//     any other process, and then sees its events); look up the group's
//     ids and idempotency keys;
//  2. insert the new events with the next seqs; move the head; notify;
//     COMMIT.
//
// Every appender holds the head row from its first statement to its
// commit, so dedup by lookup is exact and seqs commit in order (see the
// package doc); the unique indexes on id and (run_id, idempotency_key)
// hold the rule even against a writer that did not take the lock.
func (s *Store) commit(batch []*request) {
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err // given up before its commit: not stored
			close(r.done)
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.StatementTimeout+5*time.Second)
	defer cancel()
	err := s.appendTx(ctx, live)
	for _, r := range live {
		if err != nil {
			r.res, r.err = nil, s.mapErr(ctx, "append", err)
		}
		close(r.done)
	}
	if err == nil {
		s.sig.Notify() // followers in this process need not wait for the notification
	}
}

func (s *Store) appendTx(ctx context.Context, live []*request) (err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	inTx := false
	defer func() {
		if err != nil && inTx {
			rollback(conn)
		}
		conn.Release()
	}()

	var ids, runs, keys []string
	for _, r := range live {
		for i := range r.entries {
			e := &r.entries[i]
			ids = append(ids, e.ID)
			if e.IdempotencyKey != "" {
				runs = append(runs, e.RunID)
				keys = append(keys, e.IdempotencyKey)
			}
		}
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	// Every lookup of this transaction probes an index by key, which the
	// settings make the only plan: a plan that scans what it should probe
	// (summaryLookup on a new store, whose tables look too small to
	// probe) would hold every appender of the store for as long as it
	// scans. With no other plan to pick, each statement is planned once
	// per connection (generic plans) instead of at every commit, inside
	// the head lock.
	b.Queue(probePlans)
	b.Queue("SELECT seq, ts FROM head FOR UPDATE")
	b.Queue("SELECT id, seq FROM events WHERE id = ANY($1::text[])", ids)
	if len(keys) > 0 {
		b.Queue("SELECT e.run_id, e.idem_key, e.seq FROM events e JOIN unnest($1::text[], $2::text[]) AS k(run_id, idem_key) ON e.run_id = k.run_id AND e.idem_key = k.idem_key", runs, keys)
	}
	sums := newSummaries()
	sruns, sthreads, stasks := summaryKeys(live)
	queueLookups(b, sruns, sthreads, stasks)
	inTx = true
	br := conn.SendBatch(ctx, b)
	var head int64
	var headTS time.Time
	byID := map[string]uint64{}
	byKey := map[string]uint64{}
	err = func() error {
		for range 2 { // BEGIN, probePlans
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		if err := br.QueryRow().Scan(&head, &headTS); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			var seq int64
			if err := rows.Scan(&id, &seq); err != nil {
				return err
			}
			byID[id] = uint64(seq)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(keys) > 0 {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			for rows.Next() {
				var run, key string
				var seq int64
				if err := rows.Scan(&run, &key, &seq); err != nil {
					return err
				}
				byKey[run+"\x00"+key] = uint64(seq)
			}
			if err := rows.Err(); err != nil {
				return err
			}
		}
		if err := sums.readLookups(br); err != nil {
			return err
		}
		return br.Close()
	}()
	if err != nil {
		br.Close()
		return err
	}

	// Dedup (docs/protocol.md §5.2): the id first, then (run_id,
	// idempotency_key); the log, then earlier messages of this group.
	now := s.opts.Clock().UTC().Truncate(time.Microsecond)
	if now.Before(headTS) {
		now = headTS // times never decrease along seq, whatever the clocks
	}
	seq := uint64(head)
	dropped := 0 // entries left out by AppendIfNew (not duplicates)
	touched := map[string]bool{}
	var (
		seqs                                 []int64
		nids, nruns, nthreads, ntasks, nagts []string
		ntypes, nkeys                        []string
		raws                                 [][]byte
	)
	for _, r := range live {
		r.res = make([]store.AppendResult, len(r.entries))
		for i := range r.entries {
			e := &r.entries[i]
			if dup, ok := byID[e.ID]; ok {
				r.res[i] = store.AppendResult{Seq: dup, Duplicate: true, DuplicateBy: store.DedupByID}
				if i == 0 && r.cond {
					dropped += len(r.entries) - 1 // the rest stay zero (store.Conditional)
					break
				}
				continue
			}
			k := e.RunID + "\x00" + e.IdempotencyKey
			if e.IdempotencyKey != "" {
				if dup, ok := byKey[k]; ok {
					r.res[i] = store.AppendResult{Seq: dup, Duplicate: true, DuplicateBy: store.DedupByIdempotencyKey}
					if i == 0 && r.cond {
						dropped += len(r.entries) - 1
						break
					}
					continue
				}
			}
			seq++
			byID[e.ID] = seq
			if e.IdempotencyKey != "" {
				byKey[k] = seq
			}
			r.res[i] = store.AppendResult{Seq: seq}
			sums.fold(e, seq, now)
			touched["r"+e.RunID], touched["t"+e.ThreadID] = true, true
			seqs = append(seqs, int64(seq))
			nids = append(nids, e.ID)
			nruns = append(nruns, e.RunID)
			nthreads = append(nthreads, e.ThreadID)
			ntasks = append(ntasks, e.TaskID)
			nagts = append(nagts, e.AgentID)
			ntypes = append(ntypes, string(e.Type))
			nkeys = append(nkeys, e.IdempotencyKey)
			raws = append(raws, e.Raw)
		}
	}
	total := len(ids)
	if len(seqs) == 0 {
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			return err
		}
		inTx = false
		s.duplicates.Add(uint64(total - dropped))
		return nil
	}
	b = &pgx.Batch{}
	b.Queue(`INSERT INTO events (seq, ts, id, run_id, thread_id, task_id, agent_id, type, idem_key, raw)
		SELECT u.seq, $1, u.id, u.run_id, u.thread_id, u.task_id, u.agent_id, u.type, NULLIF(u.idem_key, ''), u.raw
		FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::bytea[])
		AS u(seq, id, run_id, thread_id, task_id, agent_id, type, idem_key, raw)`,
		now, seqs, nids, nruns, nthreads, ntasks, nagts, ntypes, nkeys, raws)
	sums.queueWrites(b, touched)
	b.Queue("UPDATE head SET seq = $1, ts = $2", int64(seq), now)
	b.Queue("SELECT pg_notify($1, $2)", s.channel, strconv.FormatUint(seq, 10))
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	inTx = false
	s.commits.Add(1)
	s.appended.Add(uint64(len(seqs)))
	s.duplicates.Add(uint64(total - len(seqs) - dropped))
	return nil
}

// probePlans sets the plans of the append transaction: generic, made of
// index probes joined by nested loops.
const probePlans = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true),
	set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
	set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`

// rollback ends a failed transaction; a connection that cannot is closed,
// so the pool does not hand it out again.
func rollback(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if conn.Conn().IsClosed() {
		return
	}
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		conn.Conn().Close(ctx)
	}
}
