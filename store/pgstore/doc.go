// Package pgstore is a [store.Store] in PostgreSQL (through
// github.com/jackc/pgx/v5 and its pool): the event log for a team spread
// over many processes and machines, on a database operators already run,
// replicate and back up. Any number of processes may open the same store
// at once; each sees every event of the others. It passes the store
// conformance suite ([github.com/clutchprotocol/clutch/store/storetest])
// with durability on.
//
// # Basics
//
//	s, err := pgstore.Open(ctx, "postgres://clutch@db.internal/clutch", nil)
//	if err != nil { ... }
//	defer s.Close()
//	res, err := s.Append(ctx, msg) // committed when it returns
//
// Open creates the store's tables in a PostgreSQL schema (Options.Schema,
// "clutch" by default) or migrates them to [SchemaVersion]: the
// migrations are embedded and versioned, applied in one transaction under
// an advisory lock, so processes that open a new store at once create it
// once. A schema of a newer version is refused with a [*SchemaError] and
// left untouched. The store keeps, per event, the message's bytes exactly
// as appended (bytea: a signed message stays verifiable), its seq and
// time, and the indexed fields: id and (run_id, idempotency_key), each
// under a unique index, and run_id, thread_id, task_id and from.agent_id,
// each indexed with seq. The type is kept beside them, not indexed
// (version 7 drops the index version 1 made): a query's type prefix
// filters the events its fields find, and a query by type prefix alone
// reads the log in seq order. Artifacts are content addressed: keyed by
// the SHA-256 of their bytes. The run and thread summaries of Runs and
// Threads are rows kept in the append transaction, with the fold rules
// every backend shares; a store migrated from a version without them gets
// them computed from its events by the migration. Version 3 adds their
// titles, agents, failures and waiting tasks with defaults: summaries
// kept before it read as having none, and get them from the events
// appended after. Version 6 adds their bytes (store.Summary.Bytes),
// computed by the migration from the events in the table.
//
// # Sequence numbers across processes
//
// The store contract wants seqs without gaps, and followers that yield
// every event once, in seq order. A PostgreSQL sequence gives neither
// across concurrent transactions: a rolled-back transaction leaves a gap,
// and a transaction that took seq 7 may commit after one that took 8, so
// a reader that saw 8 and moved on would never see 7. pgstore assigns
// seqs from a one-row counter (the head table) that every append
// transaction locks with SELECT ... FOR UPDATE first and updates last:
//
//   - a transaction that rolls back rolls its seqs back with it: no gaps;
//   - the next appender gets the row only once the previous holder has
//     committed and become visible (PostgreSQL releases a transaction's
//     row locks after it is visible to new snapshots), so seqs become
//     visible in order: a snapshot that sees seq n sees every seq below n.
//
// A read is one statement that reads the head and the events up to it in
// one snapshot, so Follow never skips an event, and never yields one
// twice since it resumes after the last seq it yielded. Deduplication
// reads the ids and keys under the same lock, so it is exact; the unique
// indexes hold the rule even against a writer that bypasses the lock.
// The price is that appends to one store are serialized across processes,
// one transaction at a time: each process group-commits the Append calls
// waiting at one moment into one transaction (at most Options.MaxBatch
// events; a call is never split), so durable throughput grows with the
// number of concurrent appenders instead of being one commit per message.
// [Store.AppendIfNew] (store.Conditional) takes the same transaction: a
// call whose first message is a duplicate, by the same exact lookup, puts
// nothing, and the group's other calls are stored as usual.
// Event times come from Options.Clock, but never go below the previous
// event's (the head keeps it), whatever the clocks of the processes.
//
// # Following
//
// Every append transaction sends a NOTIFY with its last seq; each Store
// holds one LISTEN connection and wakes its one follower, and wakes it at
// once for its own appends. Every Follow of the Store shares that
// follower (docs/protocol.md §8.1), so an append costs each process one
// statement however many streams it has open. Every Options.PollInterval
// (1s) without a notification it reads the head, so a notification lost
// with a broken connection delays a follower by at most that interval. A
// follower survives a broken connection or a database restart: it reads
// again from where it was once the database answers.
//
// # Presence
//
// The Store implements store.Presence with the table presence (schema
// version 4): one row per key, one upsert per beat, committed on its own
// and seen at once by every process sharing the schema. The upsert returns
// the beat it replaced from the row it locked, so concurrent beats of one
// key each learn the one before. Beat times are Options.Clock readings, to
// the microsecond.
//
// # Removal
//
// The Store implements store.Remover (schema version 5, table
// tombstones): RemoveRuns is one transaction that takes the head row as
// an append does, so it is ordered with the appends of every process. It
// deletes the runs' events (their id and idempotency keys go with them),
// replaces the summaries and task states they changed, and writes a
// tombstone row per run. The head keeps its seq: seqs are not reused. The
// rows' space is PostgreSQL's to reclaim: autovacuum (or VACUUM) makes it
// reusable, VACUUM FULL or pg_repack gives it back to the system.
//
// # Errors
//
// Besides the store contract's errors (store.ErrClosed, store.ErrNotFound,
// ...):
//
//   - [ErrUnavailable] (code DEPENDENCY, retryable): the database cannot
//     be reached, the connection broke, the server is restarting or is a
//     read-only standby. Each Append is one transaction, so a failed one
//     stored all of its messages or none; when the connection broke
//     during the commit the caller cannot know which, and appending the
//     same messages again is safe (deduplication);
//   - [ErrTimeout] (code TIMEOUT, retryable): a statement ran, or waited
//     for the append lock, past Options.StatementTimeout;
//   - [ErrSchema] ([*SchemaError] for a newer version): Open refused the
//     schema;
//   - [ErrDatabase] (code INTERNAL): the server refused a statement for
//     another reason (permissions, a full disk); it wraps the
//     *pgconn.PgError;
//   - [ErrInvalidOptions].
//
// A call whose context ends returns ctx.Err(); a statement in flight is
// abandoned with its connection.
//
// # Backup and restore
//
// PostgreSQL's own tools back the store up; pgstore adds none. A store is
// its schema (Options.Schema) and nothing outside it: its tables with
// their indexes, and the schema_version row (no sequence, function or
// role of its own). The package's tests (TestDumpRestoreUnderLoad) run
// this procedure with the pg_dump and pg_restore of the server's major
// version, while eight appenders go on:
//
//	pg_dump --schema=clutch --format=custom --file=clutch.dump --dbname=<the store's database>
//	CREATE DATABASE restored;  -- an empty database, made by any client
//	pg_restore --no-owner --single-transaction --exit-on-error --dbname=<restored> clutch.dump
//
// and then Open on the restored database with the same Options.Schema.
// What it gives:
//
//   - pg_dump reads every table of the schema in one snapshot, without
//     stopping appends (it holds only locks that DDL waits for: a
//     migration, VACUUM FULL), so the dump holds every event acknowledged
//     before pg_dump started, and the head, the events, the summaries,
//     task states, beats, tombstones and artifacts of one moment: no event
//     past the head, and every event the store held at or below it;
//   - pg_restore --single-transaction restores all of it or nothing;
//     --no-owner makes the role it connects as the owner of the tables;
//   - Open takes the restored schema as it is (migrating an older version
//     as usual). The restored log is the source's up to the dump's last
//     seq, byte for byte, with each event's seq and time; its task
//     lifecycles pass storetest.CheckTerminals and its summaries are the
//     projection of its events (storetest.CheckLister); ids and
//     idempotency keys of its events are duplicates; the next append gets
//     the dump's last seq + 1, and followers in every process opened on
//     the restored database follow it from there (LISTEN/NOTIFY works as
//     on the source). Unlike boltstore, pgstore has no Check method: the
//     tables' keys and constraints hold the log's rules, and those two
//     storetest checks are what the tests run on a restored store.
//
// What it does not give:
//
//   - a dump is one moment: events appended after pg_dump took its
//     snapshot are not in it, and the restored store gives their seqs to
//     new events. A client that kept a seq to resume from (a UI, a
//     projection) past the restored head must start again at or below it,
//     and processes of the source must be restarted on the restored
//     database;
//   - the cluster's roles and their grants are not in it: create the
//     role the store's processes connect as first (pg_dumpall
//     --roles-only copies them). The tests restore into the same cluster,
//     with the same role; into another cluster, and in place (the source
//     schema dropped, DROP SCHEMA clutch CASCADE, with every process of
//     the store stopped), the procedure is the same but untested here;
//   - point-in-time recovery: pg_basebackup with WAL archiving copies the
//     whole cluster and recovers it to a moment after the base backup.
//     Each append is one transaction that moves the head with its events,
//     so any moment PostgreSQL recovers to is a consistent store, as after
//     a crash; this package's tests do not run it.
//
// # Compaction and usage
//
// PostgreSQL reclaims space itself; pgstore adds no compaction. Rows that
// retention deletes become dead tuples that (auto)VACUUM makes reusable
// for later appends, without a lock that stops them; the tables' files
// shrink only with VACUUM FULL (which rewrites a table and its indexes
// under an ACCESS EXCLUSIVE lock: appends and reads of the store wait
// until it ends) or with the pg_repack extension (an online rewrite that
// holds that lock only for the swap at its end), the equivalents of
// boltstore's Compact. Seqs, the head and the indexes are kept by either.
// [Store.Usage] reports the size of the store's tables with their indexes
// and TOAST (pg_total_relation_size), its events and oldest event by
// index lookups, and the last VACUUM or autovacuum of the events table
// (pg_stat_user_tables) as LastCompaction; LastBackup is zero, since
// backups are made by tools outside the store.
//
// # Caveats
//
// It needs PostgreSQL 12 or newer.
// Events are deleted only by RemoveRuns, and only for runs that have
// ended, so the dedup window of an event lasts until its run is removed
// (at least until the run ends, as docs/protocol.md §5.2 asks); artifacts
// are never deleted.
// The database role needs CREATE on the database to make the schema, or
// the schema made beforehand by an administrator. A session that stalls
// inside an append transaction (a paused process) holds every appender of
// the store until its statement or idle timeout (Options.StatementTimeout)
// ends it. Store.DSN returns the connection string as given, password
// included.
package pgstore
