package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/storetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if crashChild() {
		return
	}
	goleak.VerifyTestMain(m)
}

// opener returns a newStore and a Reopen for storetest with these options.
func opener(opts *boltstore.Options) (func(*testing.T) store.Store, func(*testing.T, store.Store) store.Store) {
	open := func(t *testing.T, path string) store.Store {
		t.Helper()
		s, err := boltstore.Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	newStore := func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "events.db"))
	}
	reopen := func(t *testing.T, closed store.Store) store.Store {
		return open(t, closed.(*boltstore.Store).Path())
	}
	return newStore, reopen
}

func TestConformance(t *testing.T) {
	for _, c := range []struct {
		name string
		opts *boltstore.Options
		so   storetest.Options
	}{
		{"defaults", nil, storetest.Options{}},
		// Index flushes after every commit, and after every few events:
		// reads then cross the file/tail boundary everywhere.
		{"IndexBatch=1", &boltstore.Options{IndexBatch: 1}, storetest.Options{}},
		{"IndexBatch=7", &boltstore.Options{IndexBatch: 7}, storetest.Options{}},
		{"MaxBatch=1", &boltstore.Options{MaxBatch: 1, IndexBatch: 100}, storetest.Options{}},
		{"small limits", &boltstore.Options{MaxEventSize: 4096, MaxArtifactSize: 2 << 20, IndexBatch: 50},
			storetest.Options{MaxEventSize: 4096, MaxArtifactSize: 2 << 20}},
	} {
		t.Run(c.name, func(t *testing.T) {
			newStore, reopen := opener(c.opts)
			c.so.Reopen = reopen
			storetest.Run(t, newStore, c.so)
		})
	}
}
