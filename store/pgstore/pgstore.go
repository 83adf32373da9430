package pgstore

import (
	"context"
	"errors"
	"iter"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is a store.Store in a PostgreSQL database. It is safe for
// concurrent use, and any number of Stores, in any number of processes,
// may share one database schema.
type Store struct {
	pool    *pgxpool.Pool
	dsn     string
	opts    Options
	channel string // the NOTIFY channel of the schema
	sig     driver.Signal
	hub     *driver.Hub // the one follower of the store in this process, shared by every Follow

	closeMu sync.RWMutex // orders Append's hand-off to the writer with Close
	closing bool
	reqs    chan *request
	wdone   chan struct{}
	closed  atomic.Bool
	cdone   sync.Once

	stopListen context.CancelFunc
	ldone      chan struct{}

	commits, appended, duplicates atomic.Uint64
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Lister      = (*Store)(nil)
	_ store.Clock       = (*Store)(nil)
	_ store.Conditional = (*Store)(nil)
)

// Open connects to the database named by dsn (a libpq connection string
// or postgres:// URL, as pgx reads it), creates the store's schema or
// migrates it to SchemaVersion, and starts listening for appends of
// other processes. opts may be nil. A database that cannot be reached
// gives ErrUnavailable; a schema of a newer version gives a
// *SchemaError (ErrSchema), and nothing is written to it.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	o.setDefaults()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, coded.Wrap(ErrInvalidOptions, "dsn does not parse", err)
	}
	cfg.MaxConns = o.MaxConns
	rp := cfg.ConnConfig.RuntimeParams
	rp["search_path"] = o.Schema
	rp["statement_timeout"] = strconv.FormatInt(o.StatementTimeout.Milliseconds(), 10)
	// A session that dies in a transaction must not hold the append lock.
	rp["idle_in_transaction_session_timeout"] = strconv.FormatInt(o.StatementTimeout.Milliseconds(), 10)
	rp["application_name"] = "clutch-pgstore"
	// Every statement of the store reads or writes a few rows by index:
	// JIT compilation costs milliseconds and never pays off here, yet the
	// planner turns it on whenever a plan's estimate is high, as for the
	// pages of a follower before head has statistics.
	rp["jit"] = "off"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, coded.Wrap(ErrInvalidOptions, "pool configuration", err)
	}
	s := &Store{
		pool:    pool,
		dsn:     dsn,
		opts:    o,
		channel: "clutch_events_" + o.Schema,
		reqs:    make(chan *request, 4096),
		wdone:   make(chan struct{}),
		ldone:   make(chan struct{}),
	}
	s.hub = driver.NewHub(&s.sig, s.followPage, s.followLastSeq)
	if err := migrate(ctx, pool, o.Schema); err != nil {
		pool.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, s.mapErr(ctx, "open", err)
	}
	lctx, cancel := context.WithCancel(context.Background())
	s.stopListen = cancel
	go s.listen(lctx, cfg.ConnConfig.Copy())
	go s.writer()
	return s, nil
}

// DSN returns the connection string the store was opened with.
func (s *Store) DSN() string { return s.dsn }

// Schema returns the PostgreSQL schema that holds the store.
func (s *Store) Schema() string { return s.opts.Schema }

// Stats counts what this Store did since Open.
type Stats struct {
	Commits    uint64 // append transactions committed (group commits)
	Appended   uint64 // events appended
	Duplicates uint64 // messages found to be duplicates
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{Commits: s.commits.Load(), Appended: s.appended.Load(), Duplicates: s.duplicates.Load()}
}

// mapErr turns what pgx returned into the store's errors: ctx's error
// when ctx is done, store.ErrClosed after Close, ErrTimeout,
// ErrUnavailable for a broken or refused connection, ErrDatabase for a
// statement the server refused.
func (s *Store) mapErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	if errors.Is(err, store.ErrClosed) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrSchema) ||
		errors.Is(err, ErrTimeout) || errors.Is(err, ErrDatabase) || errors.Is(err, ErrInvalidOptions) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "57014" || pe.Code == "55P03": // query_canceled (statement_timeout), lock_not_available
			return coded.Wrap(ErrTimeout, op, err)
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutdown, crash, starting up
			pe.Code == "53300",                     // too many connections
			pe.Code == "40001", pe.Code == "40P01", // serialization failure, deadlock
			pe.Code == "25006", // read-only transaction: a standby after a failover
			pe.Code == "25P03": // idle-in-transaction timeout
			return coded.Wrap(ErrUnavailable, op, err)
		}
		return coded.Wrap(ErrDatabase, op, err)
	}
	// Anything else from pgx is the connection: refused, cut, timed out.
	return coded.Wrap(ErrUnavailable, op, err)
}

// Append implements store.Store. Concurrent calls are group-committed:
// the calls waiting at one moment share one transaction and one commit.
func (s *Store) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	return s.append(ctx, msgs, false)
}

// AppendIfNew implements store.Conditional: Append, storing nothing of
// the call when its first message is a duplicate. The writer checks it in
// the group's transaction, under the head lock, so the calls of a group
// are dropped or stored each on its own, and no other process appends
// between the check and the insert.
func (s *Store) AppendIfNew(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	return s.append(ctx, msgs, true)
}

// append is Append, or AppendIfNew when cond is set.
func (s *Store) append(ctx context.Context, msgs []*protocol.Message, cond bool) ([]store.AppendResult, error) {
	entries, err := driver.Prepare(nil, msgs, s.opts.MaxEventSize)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		if s.closed.Load() {
			return nil, store.ErrClosed
		}
		return nil, nil
	}
	r := &request{ctx: ctx, entries: entries, done: make(chan struct{}), cond: cond}
	s.closeMu.RLock()
	if s.closing {
		s.closeMu.RUnlock()
		return nil, store.ErrClosed
	}
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		s.closeMu.RUnlock()
		return nil, ctx.Err()
	}
	s.closeMu.RUnlock()
	select {
	case <-r.done:
		if r.err != nil {
			return nil, r.err
		}
		return r.res, nil
	case <-ctx.Done():
		// The writer may still commit it; dedup makes a retry safe.
		return nil, ctx.Err()
	}
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Event, error) {
	if err := s.check(ctx); err != nil {
		return store.Event{}, err
	}
	var ev store.Event
	var seq int64
	err := s.pool.QueryRow(ctx, "SELECT seq, ts, raw FROM events WHERE id = $1", id).Scan(&seq, &ev.Time, &ev.Raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Event{}, store.ErrNotFound
	}
	if err != nil {
		return store.Event{}, s.mapErr(ctx, "get", err)
	}
	ev.Seq, ev.Time = uint64(seq), ev.Time.UTC()
	return ev, nil
}

func (s *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// Now implements store.Clock: a reading of Options.Clock, in UTC.
func (s *Store) Now() time.Time { return s.opts.Clock().UTC() }

// LastSeq implements store.Store.
func (s *Store) LastSeq(ctx context.Context) (uint64, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	var seq int64
	if err := s.pool.QueryRow(ctx, "SELECT seq FROM head").Scan(&seq); err != nil {
		return 0, s.mapErr(ctx, "last seq", err)
	}
	return uint64(seq), nil
}

// Read implements store.Store. Each page is one statement; nothing is
// held between pages.
func (s *Store) Read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	if q.Limit > 0 && q.Limit <= driver.PageSize {
		// One page: its statement reads the head and the events up to it
		// in one snapshot, so it needs no head read of its own first.
		return driver.GoneRead(q, s.gone(ctx), driver.Read(ctx, q, s.noLastSeq, s.page))
	}
	return driver.GoneRead(q, s.gone(ctx), driver.Read(ctx, q, s.LastSeq, s.page))
}

// noLastSeq is the last seq of a Read of one page, which page bounds
// itself.
func (s *Store) noLastSeq(ctx context.Context) (uint64, error) { return 1<<63 - 1, s.check(ctx) }

// Follow implements store.Store. Every Follow of the store in this
// process shares one follower (driver.Hub), which wakes on the
// notification every append sends (from any process) and looks again
// every Options.PollInterval in case one was lost: one statement per
// append however many streams are open. A broken connection does not end
// it: it reads again once the database is back, from where it was.
func (s *Store) Follow(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return driver.Gone(q, s.gone(ctx), s.hub.Follow(ctx, q))
}

// followPage is page that waits out ErrUnavailable and ErrTimeout: the
// page of the hub's follower and of a reader's catch-up.
func (s *Store) followPage(ctx context.Context, q store.Query, after, upTo uint64, max int) ([]store.Event, uint64, error) {
	wait := 10 * time.Millisecond
	for {
		evs, through, err := s.page(ctx, q, after, upTo, max)
		if err == nil || !transient(err) || len(evs) > 0 {
			return evs, through, err
		}
		if err := s.waitOut(ctx, &wait); err != nil {
			return nil, after, err
		}
	}
}

// followLastSeq is LastSeq that waits out ErrUnavailable and ErrTimeout:
// where the hub's follower starts.
func (s *Store) followLastSeq(ctx context.Context) (uint64, error) {
	wait := 10 * time.Millisecond
	for {
		seq, err := s.LastSeq(ctx)
		if err == nil || !transient(err) {
			return seq, err
		}
		if err := s.waitOut(ctx, &wait); err != nil {
			return 0, err
		}
	}
}

// transient reports whether err is one a follower waits out.
func transient(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrTimeout)
}

// waitOut waits *wait (doubled, up to Options.PollInterval, for the next
// time) or until the store is notified, before a follower tries the
// database again; it returns ctx.Err() or store.ErrClosed when it must
// not.
func (s *Store) waitOut(ctx context.Context, wait *time.Duration) error {
	wake := s.sig.Wait() // Close notifies
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
	case <-time.After(*wait):
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	*wait = min(2**wait, s.opts.PollInterval)
	return nil
}

// page is the driver.PageFunc of the store: one statement, so that the
// head it reads and the events it returns come from one snapshot. Seqs
// are assigned and committed in order (see the package doc), so every
// event up to the head is visible in that snapshot.
func (s *Store) page(ctx context.Context, q store.Query, after, upTo uint64, max int) ([]store.Event, uint64, error) {
	if err := s.check(ctx); err != nil {
		return nil, after, err
	}
	if upTo > 1<<63-1 {
		upTo = 1<<63 - 1
	}
	if after >= 1<<63-1 {
		return nil, after, nil // seqs are bigint: none comes after it
	}
	sql, args := pageSQL(q, after, upTo, max)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, after, s.mapErr(ctx, "read", err)
	}
	defer rows.Close()
	var evs []store.Event
	var head int64
	for rows.Next() {
		var seq *int64
		var ts *time.Time
		var raw []byte
		if err := rows.Scan(&head, &seq, &ts, &raw); err != nil {
			return evs, after, s.mapErr(ctx, "read", err)
		}
		if seq != nil {
			evs = append(evs, store.Event{Seq: uint64(*seq), Time: ts.UTC(), Raw: raw})
		}
	}
	if err := rows.Err(); err != nil {
		return evs, after, s.mapErr(ctx, "read", err)
	}
	if len(evs) == max {
		return evs, evs[len(evs)-1].Seq, nil
	}
	return evs, max64(after, min(upTo, uint64(head))), nil
}

func max64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// pageSQL builds the statement of a page. Only the fields set in q
// become conditions, so each shape of query is its own prepared
// statement and the planner picks the index of the field it filters on.
func pageSQL(q store.Query, after, upTo uint64, max int) (string, []any) {
	var b strings.Builder
	b.WriteString("SELECT h.seq, e.seq, e.ts, e.raw FROM head h LEFT JOIN LATERAL (SELECT seq, ts, raw FROM events WHERE seq > $1 AND seq <= LEAST($2, h.seq)")
	args := []any{int64(after), int64(upTo)}
	cond := func(col, v string) {
		if v != "" {
			args = append(args, v)
			b.WriteString(" AND " + col + " = $" + strconv.Itoa(len(args)))
		}
	}
	cond("task_id", q.TaskID)
	if q.TaskID != "" {
		// events_task indexes the events with a task only (schema version
		// 1). Said here, a plan made for any task (the generic plan
		// PostgreSQL keeps for a prepared statement) can use it; without
		// it, PostgreSQL planned each call again, at four times the cost of
		// running it, and once the table had statistics kept a plan that
		// read the log from the first event to find a task's.
		b.WriteString(" AND task_id <> ''")
	}
	cond("thread_id", q.ThreadID)
	cond("run_id", q.RunID)
	cond("agent_id", q.AgentID)
	if q.TypePrefix != "" {
		args = append(args, likePrefix(q.TypePrefix))
		b.WriteString(" AND type LIKE $" + strconv.Itoa(len(args)))
	}
	args = append(args, max)
	b.WriteString(" ORDER BY seq LIMIT $" + strconv.Itoa(len(args)) + ") e ON true ORDER BY e.seq")
	return b.String(), args
}

// likePrefix returns the LIKE pattern of a plain prefix.
func likePrefix(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(p) + "%"
}

// PutArtifact implements store.Store.
func (s *Store) PutArtifact(ctx context.Context, mediaType string, data []byte) (string, error) {
	mt, err := store.CheckMediaType(mediaType)
	if err != nil {
		return "", err
	}
	if len(data) > s.opts.MaxArtifactSize {
		return "", &store.TooLargeError{What: "artifact", Index: -1, Size: len(data), Limit: s.opts.MaxArtifactSize}
	}
	if err := s.check(ctx); err != nil {
		return "", err
	}
	ref := store.ArtifactRef(data)
	sum, _ := store.ParseArtifactRef(ref)
	if data == nil {
		data = []byte{}
	}
	_, err = s.pool.Exec(ctx, "INSERT INTO artifacts (digest, media_type, data) VALUES ($1, $2, $3) ON CONFLICT (digest) DO NOTHING", sum[:], mt, data)
	if err != nil {
		return "", s.mapErr(ctx, "put artifact", err)
	}
	return ref, nil
}

// GetArtifact implements store.Store.
func (s *Store) GetArtifact(ctx context.Context, ref string) (store.Artifact, error) {
	sum, err := store.ParseArtifactRef(ref)
	if err != nil {
		return store.Artifact{}, err
	}
	if err := s.check(ctx); err != nil {
		return store.Artifact{}, err
	}
	a := store.Artifact{Ref: ref}
	err = s.pool.QueryRow(ctx, "SELECT media_type, data FROM artifacts WHERE digest = $1", sum[:]).Scan(&a.MediaType, &a.Data)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Artifact{}, store.ErrNotFound
	}
	if err != nil {
		return store.Artifact{}, s.mapErr(ctx, "get artifact", err)
	}
	if a.Data == nil {
		a.Data = []byte{}
	}
	return a, nil
}

// Close implements store.Store: it waits for appends in flight, stops
// listening, ends followers with store.ErrClosed and closes the pool.
func (s *Store) Close() error {
	s.cdone.Do(func() {
		s.closeMu.Lock()
		s.closing = true
		close(s.reqs)
		s.closeMu.Unlock()
		<-s.wdone
		s.closed.Store(true)
		s.stopListen()
		<-s.ldone
		s.sig.Notify()
		s.pool.Close()
	})
	return nil
}
