package pgstore

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
	"github.com/jackc/pgx/v5"
)

// Removal (store.Remover): one transaction that takes the head row FOR
// UPDATE, as an append does, so it is ordered with every append of every
// process; checks every run; deletes the runs' events (their rows in the
// unique indexes on id and (run_id, idem_key) go with them: the dedup
// window ends) and run summaries; replaces the summaries and task states
// driver.Refold gives, read back from the events that stay in the same
// transaction; and writes a tombstone row per run. The head keeps its
// seq, so seqs are not reused. The rows' space is PostgreSQL's to reclaim
// (autovacuum, or VACUUM; VACUUM FULL to give it back to the system).

var _ store.Remover = (*Store)(nil)

const tombstoneCols = "run_id, removed, policy, note, archive, events, first_seq, last_seq, bytes"

func scanTombstone(row pgx.Row) (store.Tombstone, error) {
	var ts store.Tombstone
	var first, last int64
	err := row.Scan(&ts.RunID, &ts.Removed, &ts.Policy, &ts.Note, &ts.Archive, &ts.Events, &first, &last, &ts.Bytes)
	ts.FirstSeq, ts.LastSeq, ts.Removed = uint64(first), uint64(last), ts.Removed.UTC()
	return ts, err
}

// RemoveRuns implements store.Remover.
func (s *Store) RemoveRuns(ctx context.Context, runs []string, why store.Removal) ([]store.Tombstone, error) {
	runs, err := store.CheckRemoval(runs)
	if err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil || len(runs) == 0 {
		return nil, err
	}
	now := s.opts.Clock().UTC().Truncate(time.Microsecond)
	var out []store.Tombstone
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = removeTx(ctx, tx, runs, why, now)
		return err
	})
	if err != nil {
		var active *store.RunActiveError
		var notFound *store.RunNotFoundError
		if errors.As(err, &active) || errors.As(err, &notFound) {
			return nil, err
		}
		return nil, s.mapErr(ctx, "remove runs", err)
	}
	return out, nil
}

func removeTx(ctx context.Context, tx pgx.Tx, runs []string, why store.Removal, now time.Time) ([]store.Tombstone, error) {
	if _, err := tx.Exec(ctx, "SELECT seq FROM head FOR UPDATE"); err != nil {
		return nil, err
	}
	out := make([]store.Tombstone, len(runs))
	var doomed []string
	for i, run := range runs {
		sum, err := scanSummary(tx.QueryRow(ctx, "SELECT "+summaryCols+" FROM summaries WHERE kind = 'r' AND id = $1", run))
		if errors.Is(err, pgx.ErrNoRows) {
			ts, err := scanTombstone(tx.QueryRow(ctx, "SELECT "+tombstoneCols+" FROM tombstones WHERE run_id = $1", run))
			if errors.Is(err, pgx.ErrNoRows) {
				return nil, &store.RunNotFoundError{RunID: run}
			}
			if err != nil {
				return nil, err
			}
			out[i] = ts
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := why.Allows(sum); err != nil {
			return nil, err
		}
		doomed = append(doomed, run)
	}
	if len(doomed) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, "DELETE FROM events WHERE run_id = ANY($1) RETURNING seq, ts, raw", doomed)
	if err != nil {
		return nil, err
	}
	removed, err := collectStored(rows)
	if err != nil {
		return nil, err
	}
	tombs := map[string]*store.Tombstone{}
	entries := make([]driver.Entry, len(removed))
	for i, ev := range removed {
		e := &ev.Entry
		entries[i] = *e
		ts := tombs[e.RunID]
		if ts == nil {
			ts = &store.Tombstone{RunID: e.RunID, Removed: now, Policy: why.Policy, Note: why.Note, Archive: why.Archive, FirstSeq: ev.Seq}
			tombs[e.RunID] = ts
		}
		ts.Events++
		ts.FirstSeq, ts.LastSeq = min(ts.FirstSeq, ev.Seq), max(ts.LastSeq, ev.Seq)
		ts.Bytes += int64(len(e.Raw))
	}
	if _, err := tx.Exec(ctx, "DELETE FROM summaries WHERE kind = 'r' AND id = ANY($1)", doomed); err != nil {
		return nil, err
	}
	ch, err := driver.Refold(entries, func(ix driver.Index, value string) ([]driver.Stored, error) {
		col := map[driver.Index]string{driver.RunIndex: "run_id", driver.ThreadIndex: "thread_id", driver.TaskIndex: "task_id"}[ix]
		rows, err := tx.Query(ctx, "SELECT seq, ts, raw FROM events WHERE "+col+" = $1 ORDER BY seq", value)
		if err != nil {
			return nil, err
		}
		return collectStored(rows)
	})
	if err != nil {
		return nil, err
	}
	m := newSummaries()
	touched := map[string]bool{}
	var kinds, ids, goneTasks []string
	for kind, all := range map[string]map[string]*store.Summary{"r": ch.Runs, "t": ch.Threads} {
		for id, sum := range all {
			kinds, ids = append(kinds, kind), append(ids, id)
			if sum != nil {
				touched[kind+id] = true
				if kind == "r" {
					m.runs[id] = sum
				} else {
					m.threads[id] = sum
				}
			}
		}
	}
	for id, st := range ch.Tasks {
		if st == nil {
			goneTasks = append(goneTasks, id)
		} else {
			m.tasks[id], m.dirtyTasks[id] = *st, true
		}
	}
	b := &pgx.Batch{}
	// The refolded summaries replace the rows whole (their first event,
	// owner and run may have gone): delete, then insert.
	b.Queue(`DELETE FROM summaries s USING unnest($1::"char"[], $2::text[]) AS u(k, i) WHERE s.kind = u.k AND s.id = u.i`, kinds, ids)
	b.Queue("DELETE FROM task_states WHERE task_id = ANY($1)", goneTasks)
	m.queueWrites(b, touched)
	for _, run := range doomed {
		ts := tombs[run]
		b.Queue(`INSERT INTO tombstones (`+tombstoneCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (run_id) DO UPDATE SET removed = EXCLUDED.removed, policy = EXCLUDED.policy, note = EXCLUDED.note,
				archive = EXCLUDED.archive, events = EXCLUDED.events, first_seq = EXCLUDED.first_seq,
				last_seq = EXCLUDED.last_seq, bytes = EXCLUDED.bytes`,
			ts.RunID, ts.Removed, ts.Policy, ts.Note, ts.Archive, ts.Events, int64(ts.FirstSeq), int64(ts.LastSeq), ts.Bytes)
	}
	b.Queue("UPDATE head SET removed = removed + $1", int64(len(removed)))
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	for i, run := range runs {
		if ts := tombs[run]; ts != nil {
			out[i] = *ts
		}
	}
	return out, nil
}

// collectStored reads rows of seq, ts, raw as stored events.
func collectStored(rows pgx.Rows) ([]driver.Stored, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (driver.Stored, error) {
		var seq int64
		var ts time.Time
		var raw []byte
		if err := row.Scan(&seq, &ts, &raw); err != nil {
			return driver.Stored{}, err
		}
		m, err := (store.Event{Raw: raw}).Message()
		if err != nil {
			return driver.Stored{}, err
		}
		return driver.Stored{Seq: uint64(seq), Time: ts.UTC(), Entry: driver.EntryOf(m, raw)}, nil
	})
}

// gone is driver.Gone's lookup: the tombstone of a run that has no events.
func (s *Store) gone(ctx context.Context) func(string) (store.Tombstone, bool, error) {
	return func(run string) (store.Tombstone, bool, error) {
		if err := s.check(ctx); err != nil {
			return store.Tombstone{}, false, err
		}
		ts, err := scanTombstone(s.pool.QueryRow(ctx, "SELECT "+tombstoneCols+
			" FROM tombstones WHERE run_id = $1 AND NOT EXISTS (SELECT 1 FROM events WHERE run_id = $1)", run))
		if errors.Is(err, pgx.ErrNoRows) {
			return store.Tombstone{}, false, nil
		}
		if err != nil {
			return store.Tombstone{}, false, s.mapErr(ctx, "read", err)
		}
		return ts, true, nil
	}
}

// Tombstone implements store.Remover.
func (s *Store) Tombstone(ctx context.Context, runID string) (store.Tombstone, error) {
	if err := s.check(ctx); err != nil {
		return store.Tombstone{}, err
	}
	ts, err := scanTombstone(s.pool.QueryRow(ctx, "SELECT "+tombstoneCols+" FROM tombstones WHERE run_id = $1", runID))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Tombstone{}, &store.RunNotFoundError{RunID: runID}
	}
	if err != nil {
		return store.Tombstone{}, s.mapErr(ctx, "read tombstone", err)
	}
	return ts, nil
}

// Tombstones implements store.Remover: newest first, a page per statement.
func (s *Store) Tombstones(ctx context.Context, q store.ListQuery) iter.Seq2[store.Tombstone, error] {
	return func(yield func(store.Tombstone, error) bool) {
		if err := q.Validate(); err != nil {
			yield(store.Tombstone{}, err)
			return
		}
		if err := s.check(ctx); err != nil {
			yield(store.Tombstone{}, err)
			return
		}
		before, left := int64(q.Before), q.Limit
		if q.Before == 0 || q.Before > 1<<63-1 {
			before = 1<<63 - 1
		}
		for {
			n := driver.PageSize
			if left > 0 && left < n {
				n = left
			}
			rows, err := s.pool.Query(ctx, "SELECT "+tombstoneCols+" FROM tombstones WHERE last_seq < $1 ORDER BY last_seq DESC LIMIT $2", before, n)
			if err != nil {
				yield(store.Tombstone{}, s.mapErr(ctx, "list tombstones", err))
				return
			}
			page, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Tombstone, error) { return scanTombstone(row) })
			if err != nil {
				yield(store.Tombstone{}, s.mapErr(ctx, "list tombstones", err))
				return
			}
			for _, ts := range page {
				if !yield(ts, nil) {
					return
				}
			}
			if left > 0 {
				if left -= len(page); left == 0 {
					return
				}
			}
			if len(page) < n {
				return
			}
			before = int64(page[len(page)-1].LastSeq)
		}
	}
}
