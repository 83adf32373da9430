-- Run and thread summaries (store.Summary), maintained in each append
-- transaction; the task states they are counted from (version 2). The
-- summaries of the events stored before this version are computed by
-- the package after this file runs (migrate.go).
CREATE TABLE summaries (
	kind      "char" NOT NULL CHECK (kind IN ('r', 't')), -- run or thread
	id        text NOT NULL,
	run_id    text NOT NULL,
	owner     text NOT NULL,
	channel   text NOT NULL,
	first_seq bigint NOT NULL,
	last_seq  bigint NOT NULL,
	created   timestamptz NOT NULL,
	updated   timestamptz NOT NULL,
	events    integer NOT NULL,
	tasks     integer NOT NULL,
	ended     integer NOT NULL,
	status    text NOT NULL,
	PRIMARY KEY (kind, id)
);
CREATE INDEX summaries_newest ON summaries (kind, last_seq DESC);

CREATE TABLE task_states (
	task_id text PRIMARY KEY,
	ended   boolean NOT NULL,
	attempt integer NOT NULL
);
