package ui

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the tests leave no goroutine behind: the browser,
// the streams and the gateway are all stopped by each test's cleanup.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
