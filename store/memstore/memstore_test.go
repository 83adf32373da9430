package memstore_test

import (
	"errors"
	"testing"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/storetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newStore(t *testing.T) store.Store {
	s, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, newStore, storetest.Options{})
}

// The suite with small limits: exactly-at-the-limit and over-the-limit
// cases at other sizes than the defaults.
func TestConformanceSmallLimits(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := memstore.New(&memstore.Options{MaxEventSize: 4096, MaxArtifactSize: 2 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, storetest.Options{MaxEventSize: 4096, MaxArtifactSize: 2 << 20})
}

func TestInvalidOptions(t *testing.T) {
	for _, o := range []memstore.Options{{MaxEventSize: -1}, {MaxArtifactSize: -1}} {
		if _, err := memstore.New(&o); !errors.Is(err, memstore.ErrInvalidOptions) {
			t.Errorf("New(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store {
		s, err := memstore.New(nil)
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}
