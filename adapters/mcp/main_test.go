package mcp_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// Client and Server must stop what it started (connections, watchers,
// server processes' pipes).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
