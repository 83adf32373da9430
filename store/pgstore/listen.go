package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// listen holds the store's LISTEN connection: every notification of an
// append (from any process) wakes the followers of this Store. Every
// Options.PollInterval without one it reads the head and wakes them if it
// moved, so a notification the server dropped delays a follower by at
// most that interval. While the database cannot be reached it wakes the
// followers every interval, so that they find it again themselves.
func (s *Store) listen(ctx context.Context, cfg *pgx.ConnConfig) {
	defer close(s.ldone)
	wait := 10 * time.Millisecond
	var last int64 = -1
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize())
		}
		if err != nil {
			if conn != nil {
				conn.Close(context.Background())
			}
			s.sig.Notify()
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			wait = min(2*wait, s.opts.PollInterval)
			continue
		}
		wait = 10 * time.Millisecond
		s.sig.Notify() // appends while nobody listened
		for ctx.Err() == nil {
			wctx, cancel := context.WithTimeout(ctx, s.opts.PollInterval)
			_, err := conn.WaitForNotification(wctx)
			cancel()
			if err == nil {
				s.sig.Notify()
				continue
			}
			if ctx.Err() != nil || conn.IsClosed() {
				break
			}
			var head int64
			if err := conn.QueryRow(ctx, "SELECT seq FROM head").Scan(&head); err != nil {
				break
			}
			if head != last {
				last = head
				s.sig.Notify()
			}
		}
		conn.Close(context.Background())
	}
}
