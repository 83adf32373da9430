package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"time"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
	"github.com/jackc/pgx/v5"
)

// summaries is the state of the summaries a group of appends changes:
// read under the append lock, folded in Go with the driver's rules (the
// ones every backend shares), written back in the same transaction.
type summaries struct {
	runs, threads map[string]*store.Summary
	tasks         map[string]driver.TaskState
	dirtyTasks    map[string]bool
}

func newSummaries() *summaries {
	return &summaries{
		runs: map[string]*store.Summary{}, threads: map[string]*store.Summary{},
		tasks: map[string]driver.TaskState{}, dirtyTasks: map[string]bool{},
	}
}

// summaryKeys returns the runs, threads and tasks a group may change, for
// the lookups of the first round trip.
func summaryKeys(live []*request) (runs, threads, tasks []string) {
	seen := map[string]bool{}
	add := func(list *[]string, prefix, v string) {
		if v != "" && !seen[prefix+v] {
			seen[prefix+v] = true
			*list = append(*list, v)
		}
	}
	for _, r := range live {
		for i := range r.entries {
			e := &r.entries[i]
			add(&runs, "r", e.RunID)
			add(&threads, "t", e.ThreadID)
			if driver.NeedsTask(e) {
				add(&tasks, "k", e.TaskID)
			}
		}
	}
	return runs, threads, tasks
}

const summaryCols = "id, run_id, owner, channel, first_seq, last_seq, created, updated, events, tasks, ended, status, title, waiting, agents, failure, bytes"

// scanSummary reads a row of summaryCols (after the columns in before) as
// the fold keeps it: all its agents.
func scanSummary(row pgx.Row, before ...any) (store.Summary, error) {
	var s store.Summary
	var first, last int64
	var agents string
	var failure *string
	err := row.Scan(append(before, &s.ID, &s.RunID, &s.Owner, &s.Channel, &first, &last, &s.Created, &s.Updated,
		&s.Events, &s.Tasks, &s.Ended, &s.Status, &s.Title, &s.Waiting, &agents, &failure, &s.Bytes)...)
	if err != nil {
		return s, err
	}
	s.FirstSeq, s.LastSeq = uint64(first), uint64(last)
	s.Created, s.Updated = s.Created.UTC(), s.Updated.UTC()
	if agents != "[]" {
		if err := json.Unmarshal([]byte(agents), &s.Agents); err != nil {
			return s, coded.Wrap(ErrDatabase, fmt.Sprintf("the agents of summary %q", s.ID), err)
		}
	}
	if failure != nil {
		if err := json.Unmarshal([]byte(*failure), &s.Failure); err != nil {
			return s, coded.Wrap(ErrDatabase, fmt.Sprintf("the failure of summary %q", s.ID), err)
		}
	}
	return s, nil
}

// queueLookups adds the lookups of the summaries and task states keys
// names to b.
func queueLookups(b *pgx.Batch, runs, threads, tasks []string) {
	b.Queue(summaryLookup, runs, threads)
	b.Queue("SELECT task_id, ended, waiting, attempt FROM task_states WHERE task_id = ANY($1::text[])", tasks)
}

// summaryLookup probes the primary key once per run and thread: a few
// pages per commit, however many summaries the store keeps. The append
// transaction plans it once per connection, with index probes only
// (writer.go), and the primary key is the one index it can probe: the
// summaries' other index, on last_seq, has no column it names (schema
// version 7). An index led by kind matched it too, and a plan made while
// the table was small (a new store) picked that one and read every
// summary of the kind under the append lock, in every commit.
const summaryLookup = `SELECT s.* FROM unnest($1::text[], $2::text[]) AS k(run, thread),
	LATERAL ((SELECT kind, ` + summaryCols + ` FROM summaries WHERE kind = 'r' AND id = k.run LIMIT 1)
		UNION ALL (SELECT kind, ` + summaryCols + ` FROM summaries WHERE kind = 't' AND id = k.thread LIMIT 1)) s`

// readLookups reads the results of queueLookups. A task without a state
// has no task.request in the store.
func (m *summaries) readLookups(br pgx.BatchResults) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	for rows.Next() {
		var kind byte
		s, err := scanSummary(rows, &kind)
		if err != nil {
			rows.Close()
			return err
		}
		if kind == 'r' {
			m.runs[s.ID] = &s
		} else {
			m.threads[s.ID] = &s
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = br.Query()
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		var st driver.TaskState
		var attempt int32
		if err := rows.Scan(&id, &st.Ended, &st.Waiting, &attempt); err != nil {
			rows.Close()
			return err
		}
		st.Attempt = int(attempt)
		m.tasks[id] = st
	}
	return rows.Err()
}

// fold adds one new event to the summaries.
func (m *summaries) fold(e *driver.Entry, seq uint64, t time.Time) {
	var d driver.Delta
	if driver.NeedsTask(e) {
		prev, known := m.tasks[e.TaskID]
		var next driver.TaskState
		var changed bool
		if next, changed, d = driver.TaskStep(e, prev, known); changed {
			m.tasks[e.TaskID] = next
			m.dirtyTasks[e.TaskID] = true
		}
	}
	fold := func(all map[string]*store.Summary, id string) {
		if id == "" {
			return
		}
		s := all[id]
		if s == nil {
			s = new(store.Summary)
			all[id] = s
		}
		driver.Fold(s, id, e, seq, t, d)
	}
	fold(m.runs, e.RunID)
	fold(m.threads, e.ThreadID)
}

// queueWrites adds the upserts of the changed summaries and task states
// to b. Only summaries an event of the group touched are in the maps.
func (m *summaries) queueWrites(b *pgx.Batch, touched map[string]bool) {
	var kinds, ids, runs, owners, channels, statuses, titles, agents, failures []string
	var firsts, lasts []int64
	var created, updated []time.Time
	var events, tasks, ended, waiting []int32
	var sizes []int64
	add := func(kind string, all map[string]*store.Summary) {
		for id, s := range all {
			if !touched[kind+id] {
				continue
			}
			kinds, ids, runs, owners, channels, statuses = append(kinds, kind), append(ids, id), append(runs, s.RunID), append(owners, s.Owner), append(channels, s.Channel), append(statuses, s.Status)
			firsts, lasts = append(firsts, int64(s.FirstSeq)), append(lasts, int64(s.LastSeq))
			created, updated = append(created, s.Created), append(updated, s.Updated)
			events, tasks, ended = append(events, int32(s.Events)), append(tasks, int32(s.Tasks)), append(ended, int32(s.Ended))
			titles, waiting, sizes = append(titles, s.Title), append(waiting, int32(s.Waiting)), append(sizes, s.Bytes)
			agents, failures = append(agents, jsonText(s.Agents)), append(failures, "")
			if s.Failure != nil {
				failures[len(failures)-1] = jsonText(s.Failure)
			}
		}
	}
	add("r", m.runs)
	add("t", m.threads)
	if len(ids) > 0 {
		b.Queue(`INSERT INTO summaries (kind, `+summaryCols+`)
			SELECT k, i, r, o, c, f, l, cr, up, e, t, en, st, ti, w, a, NULLIF(fa, ''), b
			FROM unnest($1::"char"[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[],
				$8::timestamptz[], $9::timestamptz[], $10::int[], $11::int[], $12::int[], $13::text[],
				$14::text[], $15::int[], $16::text[], $17::text[], $18::bigint[]) AS u(k, i, r, o, c, f, l, cr, up, e, t, en, st, ti, w, a, fa, b)
			ON CONFLICT (kind, id) DO UPDATE SET channel = EXCLUDED.channel, last_seq = EXCLUDED.last_seq,
				updated = EXCLUDED.updated, events = EXCLUDED.events, tasks = EXCLUDED.tasks,
				ended = EXCLUDED.ended, status = EXCLUDED.status, title = EXCLUDED.title,
				waiting = EXCLUDED.waiting, agents = EXCLUDED.agents, failure = EXCLUDED.failure,
				bytes = EXCLUDED.bytes`,
			kinds, ids, runs, owners, channels, firsts, lasts, created, updated, events, tasks, ended, statuses,
			titles, waiting, agents, failures, sizes)
	}
	var tids []string
	var tended, twaiting []bool
	var tatt []int32
	for id := range m.dirtyTasks {
		st := m.tasks[id]
		tids, tended, twaiting, tatt = append(tids, id), append(tended, st.Ended), append(twaiting, st.Waiting), append(tatt, int32(st.Attempt))
	}
	if len(tids) > 0 {
		b.Queue(`INSERT INTO task_states (task_id, ended, waiting, attempt) SELECT * FROM unnest($1::text[], $2::boolean[], $3::boolean[], $4::int[])
			ON CONFLICT (task_id) DO UPDATE SET ended = EXCLUDED.ended, waiting = EXCLUDED.waiting, attempt = EXCLUDED.attempt`, tids, tended, twaiting, tatt)
	}
}

// jsonText is v in JSON: a list of agents or a failure, which always
// encode.
func jsonText(v any) string {
	if a, ok := v.([]string); ok && len(a) == 0 {
		return "[]"
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic("pgstore: encoding a summary: " + err.Error())
	}
	return string(b)
}

// Runs implements store.Lister: newest first, a page per statement.
func (s *Store) Runs(ctx context.Context, q store.ListQuery) iter.Seq2[store.Summary, error] {
	return s.list(ctx, q, "r")
}

// Threads implements store.Lister.
func (s *Store) Threads(ctx context.Context, q store.ListQuery) iter.Seq2[store.Summary, error] {
	return s.list(ctx, q, "t")
}

func (s *Store) list(ctx context.Context, q store.ListQuery, kind string) iter.Seq2[store.Summary, error] {
	return func(yield func(store.Summary, error) bool) {
		if err := q.Validate(); err != nil {
			yield(store.Summary{}, err)
			return
		}
		if err := s.check(ctx); err != nil {
			yield(store.Summary{}, err)
			return
		}
		before, left := int64(q.Before), q.Limit
		if q.Before == 0 || q.Before > 1<<63-1 {
			before = 1<<63 - 1 // seqs are bigint: every summary is before it
		}
		for {
			n := driver.PageSize
			if left > 0 && left < n {
				n = left
			}
			rows, err := s.pool.Query(ctx, "SELECT "+summaryCols+" FROM summaries WHERE kind = $1 AND last_seq < $2 ORDER BY last_seq DESC LIMIT $3", kind, before, n)
			if err != nil {
				yield(store.Summary{}, s.mapErr(ctx, "list", err))
				return
			}
			page, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Summary, error) { return scanSummary(row) })
			if err != nil {
				yield(store.Summary{}, s.mapErr(ctx, "list", err))
				return
			}
			for _, sum := range page {
				driver.Listed(&sum)
				if !yield(sum, nil) {
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
