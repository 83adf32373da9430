package rules

import (
	"os"
	"testing"

	"github.com/clutchprotocol/clutch/internal/backends"
)

// TestMain runs the tests with the PostgreSQL cluster of backends.Main
// (for the pgstore backend) and fails the package if a test leaves a
// goroutine behind.
func TestMain(m *testing.M) { os.Exit(backends.Main(m)) }
