package pgstore_test

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/clutchprotocol/clutch/internal/pgpeer"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/pgstore"
	"go.uber.org/goleak"
)

// cluster is started once for the package's tests (TestMain); each test
// store lives in a schema of its own.
var cluster pgpeer.Shared

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(child(role))
	}
	code := pgpeer.Main(m, &cluster)
	if code == 0 {
		// Every Store the tests closed stopped its writer, its listener
		// and its pool.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var schemas atomic.Int64

// newSchema returns a schema name no other store of this process uses.
func newSchema() string { return fmt.Sprintf("t%d_%d", os.Getpid(), schemas.Add(1)) }

// openStore opens an empty store in a new schema of the shared cluster,
// closed at the end of the test.
func openStore(t testing.TB, opts *pgstore.Options) *pgstore.Store {
	t.Helper()
	c := cluster.Need(t)
	var o pgstore.Options
	if opts != nil {
		o = *opts
	}
	if o.Schema == "" {
		o.Schema = newSchema()
	}
	s, err := pgstore.Open(t.Context(), c.DSN(""), &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func reopen(t *testing.T, closed store.Store) store.Store {
	p := closed.(*pgstore.Store)
	s, err := pgstore.Open(t.Context(), p.DSN(), &pgstore.Options{Schema: p.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
