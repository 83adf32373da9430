package rules

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/clutchprotocol/clutch/internal/backends"
)

// TestMain runs the tests with the PostgreSQL cluster of backends.Main
// (for the pgstore backend) and fails the package if a test leaves a
// goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(withBackends{m}) }

// withBackends runs m through backends.Main.
type withBackends struct{ m *testing.M }

func (w withBackends) Run() int { return backends.Main(w.m) }
