package idem

import "testing"

// The keys are stored in logs that exist already: their bytes are fixed.
func TestKeys(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{End("task_1", 2), "clutch.end/task_1/2"},
		{Dispatch("task_1", 2), "clutch.dispatch/task_1/2"},
		{Claim("task_1", 2), "clutch.claim/task_1/2"},
		{Done("task_1", 2), "clutch.done/task_1/2"},
		{Owner("task_1"), "clutch.owner/task_1"},
		{Adopt("task_1", "host:1/node_a"), "clutch.adopt/task_1/host:1/node_a"},
		{Attempt("task_1", 12), "task_1/12"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
