package main

import (
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// openStore opens the event store. (Switches to the embedded boltstore file
// once it lands.)
func openStore(path string) (store.Store, func(), error) {
	st, err := memstore.New(nil)
	if err != nil {
		return nil, nil, err
	}
	return st, func() { st.Close() }, nil
}
