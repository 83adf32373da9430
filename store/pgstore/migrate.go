package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The migrations, applied in order; file NNNN_*.sql brings the schema to
// version NNNN. A released file is never edited: a change is a new file.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() []migration {
	ents, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	var out []migration
	for _, e := range ents {
		n, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0])
		if err != nil {
			panic("pgstore: migration file without a version: " + e.Name())
		}
		b, _ := migrationFS.ReadFile("migrations/" + e.Name())
		out = append(out, migration{version: n, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			panic("pgstore: migrations are not numbered 1, 2, 3...: " + m.name)
		}
	}
	return out
}

// SchemaVersion is the schema version this package creates and reads:
// the number of its migrations.
const SchemaVersion = 7

// migrate creates the schema or brings it to SchemaVersion, in one
// transaction under an advisory lock, so that processes opening the
// store at once do not race. A newer schema is refused and left as it is.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	q := pgx.Identifier{schema}.Sanitize()
	// A migration (a backfill over a large log) may take longer than a
	// statement should: ctx bounds it instead.
	if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0"); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('clutch.pgstore.migrate.' || $1, 0))", schema); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+q); err != nil {
		return err
	}
	var hasVersion bool
	var tables int
	err = tx.QueryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'schema_version'),
		(SELECT count(*) FROM pg_tables WHERE schemaname = $1)`, schema).Scan(&hasVersion, &tables)
	if err != nil {
		return err
	}
	version := 0
	if hasVersion {
		if err := tx.QueryRow(ctx, "SELECT version FROM "+q+".schema_version").Scan(&version); err != nil {
			return coded.Wrap(ErrSchema, fmt.Sprintf("schema %q: no readable version: %v", schema, err), nil)
		}
	} else if tables > 0 {
		return coded.Wrap(ErrSchema, fmt.Sprintf("schema %q holds tables that are not a Clutch event store", schema), nil)
	}
	all := migrations()
	if version > len(all) {
		return &SchemaError{Schema: schema, Version: version, Supported: len(all)}
	}
	if version == len(all) {
		return nil // nothing to write: leave the transaction read-only
	}
	if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+q); err != nil {
		return err
	}
	if !hasVersion {
		if _, err := tx.Exec(ctx, "CREATE TABLE schema_version (version integer NOT NULL); INSERT INTO schema_version VALUES (0)"); err != nil {
			return err
		}
	}
	for _, m := range all[version:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("pgstore: migration %s: %w", m.name, err)
		}
	}
	// The work in Go comes after every file: it is this version's code,
	// which reads and writes the schema of SchemaVersion.
	for _, m := range all[version:] {
		if post := afterMigration[m.version]; post != nil && version > 0 {
			if err := post(ctx, tx); err != nil {
				return fmt.Errorf("pgstore: migration %s: %w", m.name, err)
			}
		}
	}
	if _, err := tx.Exec(ctx, "UPDATE schema_version SET version = $1", len(all)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// afterMigration holds, by version, the work a migration does in Go on a
// store that has events already (a new store has none), run once the
// schema is at SchemaVersion. Version 3 has none: the summaries kept
// before it read as without title, agents, failure and waiting tasks.
// Version 6 computes its column (the summaries' bytes) in SQL.
var afterMigration = map[int]func(ctx context.Context, tx pgx.Tx) error{
	2: backfillSummaries,
}

// backfillSummaries computes the summaries of the events stored before
// version 2, with the same rules as appends (every field of this
// version's), in one pass over the log.
func backfillSummaries(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, "SELECT seq, ts, raw FROM events ORDER BY seq")
	if err != nil {
		return err
	}
	sums := newSummaries()
	touched := map[string]bool{}
	for rows.Next() {
		var seq int64
		var ts time.Time
		var raw []byte
		if err := rows.Scan(&seq, &ts, &raw); err != nil {
			rows.Close()
			return err
		}
		m, err := (store.Event{Raw: raw}).Message()
		if err != nil {
			rows.Close()
			return fmt.Errorf("event %d: %w", seq, err)
		}
		e := driver.EntryOf(m, raw)
		sums.fold(&e, uint64(seq), ts.UTC())
		touched["r"+e.RunID], touched["t"+e.ThreadID] = true, true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	b := &pgx.Batch{}
	sums.queueWrites(b, touched)
	return tx.SendBatch(ctx, b).Close()
}
