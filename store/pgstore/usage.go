package pgstore

import (
	"context"
	"time"

	"github.com/clutchprotocol/clutch/store"
)

var _ store.UsageReporter = (*Store)(nil)

// usageSQL reads the usage in one statement, by index and catalog
// lookups only: the head's seq, the relations' sizes (with their indexes
// and TOAST), the first event by the primary key, and the last VACUUM of
// the events table, manual or automatic.
const usageSQL = `SELECT h.seq, h.removed,
	pg_total_relation_size('events'::regclass) + pg_total_relation_size('artifacts'::regclass) +
	pg_total_relation_size('summaries'::regclass) + pg_total_relation_size('task_states'::regclass) +
	pg_total_relation_size('head'::regclass) + pg_total_relation_size('tombstones'::regclass),
	o.seq, o.ts,
	(SELECT greatest(last_vacuum, last_autovacuum) FROM pg_stat_user_tables WHERE relid = 'events'::regclass)
FROM head h LEFT JOIN LATERAL (SELECT seq, ts FROM events ORDER BY seq LIMIT 1) o ON true`

// Usage implements store.UsageReporter with one statement that scans no
// table: Bytes is pg_total_relation_size of the store's tables; Events is
// the head's seq less the events removed; the oldest event is the first
// by seq; LastCompaction is the last VACUUM or autovacuum of the events
// table (pg_stat_user_tables: statistics of this server, reset with
// them). Free and LastBackup are zero: PostgreSQL's free space is
// reused in place, and backups (pg_dump, base backups) happen outside
// the store, which does not know of them.
func (s *Store) Usage(ctx context.Context) (store.Usage, error) {
	if err := s.check(ctx); err != nil {
		return store.Usage{}, err
	}
	var (
		last, gone int64
		bytes      int64
		oldest     *int64
		oldestTime *time.Time
		vacuumed   *time.Time
	)
	err := s.pool.QueryRow(ctx, usageSQL).Scan(&last, &gone, &bytes, &oldest, &oldestTime, &vacuumed)
	if err != nil {
		return store.Usage{}, s.mapErr(ctx, "usage", err)
	}
	u := store.Usage{Bytes: bytes, LastSeq: uint64(last)}
	u.Events = u.LastSeq - min(u.LastSeq, uint64(gone)) // head.removed: the events RemoveRuns removed
	if oldest != nil && oldestTime != nil {
		u.OldestSeq, u.OldestTime = uint64(*oldest), oldestTime.UTC()
	}
	if vacuumed != nil {
		u.LastCompaction = vacuumed.UTC()
	}
	return u, nil
}
