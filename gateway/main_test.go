package gateway

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/clutchprotocol/clutch/internal/backends"
)

// TestMain runs the tests with a PostgreSQL cluster for the pgstore
// backend (internal/backends) and fails them if any goroutine outlives
// them: streams, feeders and router workers all end.
func TestMain(m *testing.M) {
	code := backends.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
