package main

import (
	"os"
	"path/filepath"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// openStore opens the embedded event store (bbolt, fsync on): the file at
// path, or one in a temporary folder removed by the returned cleanup.
func openStore(path string) (store.Store, func(), error) {
	dir := ""
	if path == "" {
		var err error
		if dir, err = os.MkdirTemp("", "clutch-quickstart-"); err != nil {
			return nil, nil, err
		}
		path = filepath.Join(dir, "events.db")
	}
	st, err := boltstore.Open(path, nil)
	if err != nil {
		if dir != "" {
			os.RemoveAll(dir)
		}
		return nil, nil, err
	}
	return st, func() {
		st.Close()
		if dir != "" {
			os.RemoveAll(dir)
		}
	}, nil
}
