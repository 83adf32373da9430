-- What a UI lists of a run or thread without reading its events (version
-- 3): its title, how many of its tasks wait for an answer, the agents that
-- accepted its tasks (a JSON array of strings: every one the fold keeps)
-- and what failed (a JSON object, NULL when nothing did); and, per task,
-- whether it waits for an answer. The JSON is kept as text, not jsonb:
-- jsonb refuses \u0000, which an error message may hold. Every column is
-- added with a default, so summaries and task states written before this
-- version read as having none of these; IF NOT EXISTS makes the file safe
-- to run twice.
ALTER TABLE summaries
	ADD COLUMN IF NOT EXISTS title   text NOT NULL DEFAULT '',
	ADD COLUMN IF NOT EXISTS waiting integer NOT NULL DEFAULT 0,
	ADD COLUMN IF NOT EXISTS agents  text NOT NULL DEFAULT '[]',
	ADD COLUMN IF NOT EXISTS failure text;

ALTER TABLE task_states
	ADD COLUMN IF NOT EXISTS waiting boolean NOT NULL DEFAULT false;
