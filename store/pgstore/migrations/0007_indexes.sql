-- Fewer and plainer indexes (version 7).
--
-- No index on type alone: a query gives the type as a prefix beside the
-- indexed fields (docs/protocol.md §8.1), which find its events; a query
-- by type prefix alone reads the log in seq order and keeps the matching
-- events. The index cost every append a b-tree insert per event for no
-- read that needed it.
--
-- The summaries are listed newest first by last_seq alone, the kind
-- filtered as they are read: an index led by kind matched the lookups of
-- a summary by (kind, id) as well as the primary key does while the table
-- is small, and a plan made then scanned every summary of the kind at
-- each append (writer.go). Runs and threads interleave along last_seq, so
-- a page of one kind reads about twice its rows.
--
-- IF [NOT] EXISTS makes the file safe to run twice.
DROP INDEX IF EXISTS events_type;
DROP INDEX IF EXISTS summaries_newest;
CREATE INDEX IF NOT EXISTS summaries_last ON summaries (last_seq DESC);
