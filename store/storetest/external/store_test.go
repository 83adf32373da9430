package externalstore_test

import (
	"testing"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/storetest"

	"example.com/externalstore"
)

// TestConformance runs the whole suite on a store built outside the
// Clutch module; its summary cases go through the projection of the log.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return externalstore.New() }, storetest.Options{})
}

// TestNoLister pins what makes this store exercise the projection.
func TestNoLister(t *testing.T) {
	var s store.Store = externalstore.New()
	if _, ok := s.(store.Lister); ok {
		t.Fatal("externalstore implements store.Lister; the projection path would go untested")
	}
}
