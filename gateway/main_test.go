package gateway

import (
	"os"
	"testing"

	"github.com/clutchprotocol/clutch/internal/backends"
)

// TestMain runs the tests with a PostgreSQL cluster for the pgstore
// backend and fails them if any goroutine outlives them: streams, feeders
// and router workers all end (internal/backends).
func TestMain(m *testing.M) { os.Exit(backends.Main(m)) }
