// Package backends gives tests the three stores of the module — memstore,
// a boltstore file in t.TempDir() and a pgstore schema in a PostgreSQL
// cluster the test binary starts — so that a behaviour that depends on
// what is stored (tenancy, dedup) is checked on each.
//
// A package that uses PG calls backends.Main from its TestMain, which
// starts one cluster for the binary (internal/pgpeer); without PostgreSQL
// the pgstore case fails under CI=true and skips otherwise, with the
// reason.
package backends

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/clutchprotocol/clutch/internal/pgpeer"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/pgstore"
)

// Backend is one store implementation: New opens an empty store for t and
// closes it in t.Cleanup.
type Backend struct {
	Name string
	New  func(t testing.TB) store.Store
}

var (
	shared  pgpeer.Shared
	started atomic.Bool
	schemas atomic.Int64
)

// Main runs m with a PostgreSQL cluster for the pgstore backend, and then,
// when the tests passed, fails them if any goroutine outlives them
// (goleak); call it from TestMain: os.Exit(backends.Main(m)).
func Main(m *testing.M) int {
	started.Store(true)
	code := pgpeer.Main(m, &shared)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

// All returns memstore, boltstore and pgstore.
func All() []Backend {
	return []Backend{
		{"memstore", func(t testing.TB) store.Store {
			st, err := memstore.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"boltstore", func(t testing.TB) store.Store {
			st, err := boltstore.Open(filepath.Join(t.TempDir(), "clutch.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"pgstore", func(t testing.TB) store.Store {
			t.Helper()
			if !started.Load() {
				t.Fatal("backends: TestMain must call backends.Main for the pgstore backend")
			}
			c := shared.Need(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, err := pgstore.Open(ctx, c.DSN(""), &pgstore.Options{Schema: fmt.Sprintf("t%d", schemas.Add(1))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
	}
}

// Durable returns a fresh place for a store of the backend name
// ("boltstore" or "pgstore") that another process can open too, as a spec
// for Open: "bolt:<path>" (a file in t.TempDir()) or "pg:<dsn>#<schema>"
// (a new schema of the shared cluster; t fails or skips without
// PostgreSQL, as the pgstore backend does).
func Durable(t testing.TB, name string) string {
	t.Helper()
	switch name {
	case "boltstore":
		return "bolt:" + filepath.Join(t.TempDir(), "clutch.db")
	case "pgstore":
		if !started.Load() {
			t.Fatal("backends: TestMain must call backends.Main for the pgstore backend")
		}
		return "pg:" + shared.Need(t).DSN("") + "#" + fmt.Sprintf("t%d", schemas.Add(1))
	}
	t.Fatalf("backends: %s is not a durable backend", name)
	return ""
}

// Open opens the store a Durable spec names, in this process or another.
func Open(ctx context.Context, spec string) (store.Store, error) {
	if path, ok := strings.CutPrefix(spec, "bolt:"); ok {
		return boltstore.Open(path, nil)
	}
	if rest, ok := strings.CutPrefix(spec, "pg:"); ok {
		dsn, schema, _ := strings.Cut(rest, "#")
		return pgstore.Open(ctx, dsn, &pgstore.Options{Schema: schema})
	}
	return nil, fmt.Errorf("backends: %q is not a store spec", spec)
}

// Each runs f as a subtest of t on each store of All, named after it.
func Each(t *testing.T, f func(t *testing.T, st store.Store)) {
	t.Helper()
	for _, b := range All() {
		t.Run(b.Name, func(t *testing.T) { f(t, b.New(t)) })
	}
}
