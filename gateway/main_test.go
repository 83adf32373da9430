package gateway

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them:
// streams, feeders and router workers all end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
