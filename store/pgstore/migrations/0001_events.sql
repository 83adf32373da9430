-- The event log, its indexes, the artifact store (version 1).
-- head is the one-row counter every append takes FOR UPDATE: it assigns
-- seqs without gaps and in commit order (see the package doc).
CREATE TABLE head (
	one  boolean PRIMARY KEY DEFAULT true CHECK (one),
	seq  bigint NOT NULL,
	ts   timestamptz NOT NULL
);
INSERT INTO head (one, seq, ts) VALUES (true, 0, 'epoch');

CREATE TABLE events (
	seq       bigint PRIMARY KEY,
	ts        timestamptz NOT NULL,
	id        text NOT NULL,
	run_id    text NOT NULL,
	thread_id text NOT NULL,
	task_id   text NOT NULL,
	agent_id  text NOT NULL,
	type      text COLLATE "C" NOT NULL,
	idem_key  text,
	raw       bytea NOT NULL
);
CREATE UNIQUE INDEX events_id ON events (id);
CREATE UNIQUE INDEX events_idem ON events (run_id, idem_key) WHERE idem_key IS NOT NULL;
CREATE INDEX events_run ON events (run_id, seq);
CREATE INDEX events_thread ON events (thread_id, seq);
CREATE INDEX events_task ON events (task_id, seq) WHERE task_id <> '';
CREATE INDEX events_agent ON events (agent_id, seq);
CREATE INDEX events_type ON events (type, seq);

CREATE TABLE artifacts (
	digest     bytea PRIMARY KEY CHECK (length(digest) = 32),
	media_type text NOT NULL,
	data       bytea NOT NULL,
	created    timestamptz NOT NULL DEFAULT now()
);
