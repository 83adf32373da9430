-- Tombstones of removed runs (version 5, store.Remover): one row per run,
-- written in the transaction that deletes its events, replaced when a run
-- appended to after its removal is removed again. Listed newest first by
-- the last seq of the removed events. head.removed counts the events ever
-- removed, so that Usage counts the events without a count(*). IF NOT
-- EXISTS makes the file safe to run twice.
CREATE TABLE IF NOT EXISTS tombstones (
	run_id    text PRIMARY KEY,
	removed   timestamptz NOT NULL,
	policy    text NOT NULL,
	note      text NOT NULL,
	archive   text NOT NULL,
	events    integer NOT NULL,
	first_seq bigint NOT NULL,
	last_seq  bigint NOT NULL,
	bytes     bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS tombstones_newest ON tombstones (last_seq DESC);

ALTER TABLE head ADD COLUMN IF NOT EXISTS removed bigint NOT NULL DEFAULT 0;
