-- The stored size of a run's or thread's events (version 6,
-- store.Summary.Bytes): the sum of octet_length(raw) of its events, kept
-- in the append transaction from then on. The summaries kept before this
-- version get it computed here from the events that are in the table (a
-- removal refolds the summaries it changes, so these are exactly the
-- summarized events); octet_length of a compressed value is its
-- uncompressed length, read from the value's header. Running the file
-- again computes the same values.
ALTER TABLE summaries ADD COLUMN IF NOT EXISTS bytes bigint NOT NULL DEFAULT 0;

UPDATE summaries s SET bytes = e.n
	FROM (SELECT run_id, sum(octet_length(raw)) AS n FROM events GROUP BY run_id) e
	WHERE s.kind = 'r' AND s.id = e.run_id AND s.bytes <> e.n;

UPDATE summaries s SET bytes = e.n
	FROM (SELECT thread_id, sum(octet_length(raw)) AS n FROM events GROUP BY thread_id) e
	WHERE s.kind = 't' AND s.id = e.thread_id AND s.bytes <> e.n;
