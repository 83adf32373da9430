package pgstore

import "context"

// Setting returns the value of a server setting in a session of s's pool,
// for the tests of the settings Open gives its sessions.
func Setting(ctx context.Context, s *Store, name string) (string, error) {
	var v string
	err := s.pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v)
	return v, err
}

// SummaryLookup and ProbePlans are the append transaction's lookup of
// summaries and the settings it is planned under.
const (
	SummaryLookup = summaryLookup
	ProbePlans    = probePlans
)

// PageSQL is pageSQL: the statement of a page and its arguments.
var PageSQL = pageSQL
