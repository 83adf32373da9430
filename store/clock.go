package store

import "time"

// Clock is the upgrade interface of a Store that gives events their times
// from a clock of its own (Options.Clock of every in-tree store). The
// registry and, through it, the router take their clock from the store by
// default (see [ClockOf]), so a test that sets the store's clock controls
// all three.
type Clock interface {
	// Now returns the time the store would give an event appended now,
	// before it is raised to the previous event's time (see Event.Time).
	Now() time.Time
}

// ClockOf returns the clock s gives event times with: the Now method of s,
// or of a store it wraps (through a chain of wrappers that each have a
// method Unwrap() Store), when it implements [Clock]; nil otherwise.
func ClockOf(s Store) func() time.Time {
	if c, ok := upgrade[Clock](s); ok {
		return c.Now
	}
	return nil
}
