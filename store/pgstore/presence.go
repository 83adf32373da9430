package pgstore

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/clutchprotocol/clutch/store"
	"github.com/jackc/pgx/v5"
)

// Presence (store.Presence): the table presence holds the last beat of
// each key, one row per key, written by one upsert per beat that commits
// on its own (a beat does not wait for the appends' group commit, nor an
// append for a beat). Every process sharing the schema sees every beat
// at once: liveness across processes is read from this table, not
// followed in the log. Beat times are Options.Clock readings, as event
// times are, cut to PostgreSQL's microseconds.

var _ store.Presence = (*Store)(nil)

// Beat implements store.Presence.
func (s *Store) Beat(ctx context.Context, key string, data []byte) (at time.Time, prev store.Beat, err error) {
	if err := store.CheckBeat(key, data); err != nil {
		return time.Time{}, store.Beat{}, err
	}
	if err := s.check(ctx); err != nil {
		return time.Time{}, store.Beat{}, err
	}
	if data == nil {
		data = []byte{}
	}
	at = s.opts.Clock().UTC().Truncate(time.Microsecond)
	var p *time.Time
	var pd []byte
	// ON CONFLICT reads the row it locked, the latest beat: of two
	// concurrent beats, the second learns the first as its prev.
	err = s.pool.QueryRow(ctx, `INSERT INTO presence AS p (key, at, data, prev, prev_data) VALUES ($1, $2, $3, NULL, NULL)
		ON CONFLICT (key) DO UPDATE SET prev = p.at, prev_data = p.data, at = EXCLUDED.at, data = EXCLUDED.data
		RETURNING prev, prev_data`, key, at, data).Scan(&p, &pd)
	if err != nil {
		return time.Time{}, store.Beat{}, s.mapErr(ctx, "beat", err)
	}
	if p != nil {
		prev = store.Beat{Key: key, Time: p.UTC(), Data: pd}
		if len(pd) == 0 {
			prev.Data = nil
		}
	}
	return at, prev, nil
}

// Beats implements store.Presence: one query, by the primary key.
func (s *Store) Beats(ctx context.Context, prefix string) iter.Seq2[store.Beat, error] {
	return func(yield func(store.Beat, error) bool) {
		if err := s.check(ctx); err != nil {
			yield(store.Beat{}, err)
			return
		}
		rows, err := s.pool.Query(ctx, "SELECT key, at, data FROM presence WHERE key LIKE $1 ORDER BY key", likePrefix(prefix))
		if err != nil {
			yield(store.Beat{}, s.mapErr(ctx, "beats", err))
			return
		}
		var out []store.Beat
		for rows.Next() {
			var b store.Beat
			if err := rows.Scan(&b.Key, &b.Time, &b.Data); err != nil {
				rows.Close()
				yield(store.Beat{}, s.mapErr(ctx, "beats", err))
				return
			}
			b.Time = b.Time.UTC()
			if len(b.Data) == 0 {
				b.Data = nil
			}
			out = append(out, b)
		}
		if err := rows.Err(); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			yield(store.Beat{}, s.mapErr(ctx, "beats", err))
			return
		}
		// Read whole before yielding: a loop body may beat, and a pool
		// of one connection must not be held by the rows meanwhile.
		for _, b := range out {
			if !yield(b, nil) {
				return
			}
		}
	}
}
