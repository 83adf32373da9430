package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/clutchprotocol/clutch/internal/eventio"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/storetest"
)

const benchEvents = 100_000

// benchFile writes a store file of benchEvents events of about 1 KiB (the
// storetest benchmark messages: task lifecycles of many runs).
func benchFile(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.db")
	st, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	msgs := storetest.BenchMessages(b, benchEvents, 64)
	for _, batch := range msgs {
		for i := 0; i < len(batch); i += 1000 {
			if _, err := st.Append(context.Background(), batch[i:min(i+1000, len(batch))]...); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkExport exports a 100k-event file (read-only open, JSON lines
// or CloudEvents, to io.Discard) and reports events/s.
func BenchmarkExport(b *testing.B) {
	path := benchFile(b)
	for _, f := range []eventio.Format{eventio.JSONLines, eventio.CloudEvents} {
		b.Run(f.String(), func(b *testing.B) {
			var bytesOut countWriter
			for b.Loop() {
				src, err := (&where{db: path}).open()
				if err != nil {
					b.Fatal(err)
				}
				n, err := export(context.Background(), src, store.Query{}, &bytesOut, f, io.Discard)
				src.close()
				if err != nil || n != benchEvents {
					b.Fatalf("%d events, %v", n, err)
				}
			}
			b.ReportMetric(float64(benchEvents*b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(bytesOut)/float64(b.N), "bytes/export")
		})
	}
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// BenchmarkImport imports a 100k-event JSON lines export into a new file
// (batches of 1024, fsync per batch as by default, and with --no-sync) and
// reports events/s.
func BenchmarkImport(b *testing.B) {
	path := benchFile(b)
	src, err := (&where{db: path}).open()
	if err != nil {
		b.Fatal(err)
	}
	var data bytes.Buffer
	if _, err := export(context.Background(), src, store.Query{}, &data, eventio.JSONLines, io.Discard); err != nil {
		b.Fatal(err)
	}
	src.close()
	for _, c := range []struct {
		name   string
		nosync bool
	}{{"sync", false}, {"nosync", true}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				st, err := boltstore.Open(filepath.Join(b.TempDir(), "copy.db"), &boltstore.Options{NoSync: c.nosync})
				if err != nil {
					b.Fatal(err)
				}
				res, err := importEvents(context.Background(), st, bytes.NewReader(data.Bytes()), int64(data.Len()), 1024, io.Discard)
				if err == nil {
					err = st.Close()
				}
				if err != nil || res.appended != benchEvents {
					b.Fatalf("%+v, %v", res, err)
				}
			}
			b.ReportMetric(float64(benchEvents*b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
