package boltstore_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/retention"
)

// retentionPayload is about what an agent's progress or result carries.
var retentionPayload = json.RawMessage(`{"title":"Market analysis complete for the Nordic payments segment","findings":["Three incumbents hold 70% of volume","Real-time rails adoption doubled in 2026","Margins compress at the low end"],"citations":["https://example.com/reports/nordic-payments-2026","https://example.com/data/rails"]}`)

// endedRun is one run of ten events that has ended: a request, an accept,
// seven progress reports and a result.
func endedRun(b *testing.B, ids *protocol.IDs) []*protocol.Message {
	req := ids.NewMessage(protocol.TypeTaskRequest, "agent:user")
	req.RunID, req.ThreadID, req.TaskID = ids.RunID(), ids.ThreadID(), ids.TaskID()
	req.Payload = retentionPayload
	out := []*protocol.Message{req}
	for _, typ := range []protocol.Type{protocol.TypeTaskAccept, protocol.TypeTaskProgress, protocol.TypeTaskProgress,
		protocol.TypeTaskProgress, protocol.TypeTaskProgress, protocol.TypeTaskProgress, protocol.TypeTaskProgress,
		protocol.TypeTaskProgress, protocol.TypeTaskResult} {
		m := ids.Reply(req, typ, "agent:ken")
		m.Payload = retentionPayload
		out = append(out, m)
	}
	for _, m := range out {
		if _, err := protocol.Encode(m); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// BenchmarkRetainAndCompact measures what issue 33 asks of a long-lived
// file: a store of CLUTCH_BENCH_RETAIN events (100,000 by default; the
// note's figures use 1,000,000) in ended runs of ten, then retention that
// keeps the newest 10 % of the runs (retention.Apply, MaxRuns) and a
// compaction (Store.Compact). It reports the file's size and the time of
// Check and of a reopen before and after, and the time of the removal
// and of the compaction. One iteration is the whole sequence.
func BenchmarkRetainAndCompact(b *testing.B) {
	n := 100_000
	if v := os.Getenv("CLUTCH_BENCH_RETAIN"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "events.db")
		s, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		ids := protocol.NewIDs(nil)
		runs := n / 10
		batch := make([]*protocol.Message, 0, 1000)
		for i := range runs {
			batch = append(batch, endedRun(b, ids)...)
			if len(batch) >= 1000 || i == runs-1 {
				if _, err := s.Append(ctx, batch...); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()

		size, check, reopen := measureFile(b, path)
		b.ReportMetric(float64(size)/1e6, "MB-before")
		b.ReportMetric(check.Seconds(), "check-s-before")
		b.ReportMetric(reopen.Seconds(), "reopen-s-before")

		s, err = boltstore.Open(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		rep, err := retention.Apply(ctx, s, retention.Policy{MaxRuns: runs / 10})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "remove-s")
		if len(rep.Removed) != runs-runs/10 {
			b.Fatalf("removed %d runs, want %d", len(rep.Removed), runs-runs/10)
		}
		res, err := s.Compact(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.Duration.Seconds(), "compact-s")
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}

		size, check, reopen = measureFile(b, path)
		b.ReportMetric(float64(size)/1e6, "MB-after")
		b.ReportMetric(check.Seconds(), "check-s-after")
		b.ReportMetric(reopen.Seconds(), "reopen-s-after")
	}
}

// measureFile returns the file's size and the time a Check and a reopen
// (Open and Close) of it take.
func measureFile(b *testing.B, path string) (int64, time.Duration, time.Duration) {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	s, err := boltstore.Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	reopen := time.Since(start)
	s, err = boltstore.Open(path, &boltstore.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	start = time.Now()
	if err := s.Check(context.Background()); err != nil {
		b.Fatal(err)
	}
	return fi.Size(), time.Since(start), reopen
}
