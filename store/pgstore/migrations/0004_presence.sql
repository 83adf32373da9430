-- The last beat of each key (version 4): current state that is not an
-- event (store.Presence), one row per key whatever the number of beats.
-- prev and prev_data are the beat the row's last one replaced, set by
-- the same upsert, so a beater learns it atomically. The key is compared
-- byte by byte (COLLATE "C"), so listing by prefix uses the primary key
-- and sorts as Go strings do. IF NOT EXISTS makes the file safe to run
-- twice.
CREATE TABLE IF NOT EXISTS presence (
	key  text COLLATE "C" PRIMARY KEY,
	at   timestamptz NOT NULL,
	data bytea NOT NULL,
	prev timestamptz,
	prev_data bytea
);
