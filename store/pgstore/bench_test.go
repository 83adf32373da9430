package pgstore_test

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/storetest"
)

// BenchmarkStore runs the store benchmarks of storetest on pgstore.
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return openStore(b, nil) })
}

// BenchmarkDurableAppend64 compares durable appends from 64 goroutines
// (fsync and synchronous_commit on) on pgstore and boltstore in the same
// run, on the same machine.
func BenchmarkDurableAppend64(b *testing.B) {
	b.Run("store=pgstore", func(b *testing.B) {
		s := openStore(b, nil)
		storetest.BenchAppend(b, s, 64)
		if st := s.Stats(); st.Commits > 0 {
			b.ReportMetric(float64(st.Appended)/float64(st.Commits), "events/commit")
		}
	})
	b.Run("store=boltstore", func(b *testing.B) {
		s, err := boltstore.Open(b.TempDir()+"/b.db", nil)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		storetest.BenchAppend(b, s, 64)
	})
}

// BenchmarkFollowLatencyCrossProcess appends one event at a time while a
// follower in another process tails the store; each append waits for the
// follower to report the event. It reports the time from Append
// returning to the other process receiving the event (wall clocks of one
// machine), p50 and p99.
func BenchmarkFollowLatencyCrossProcess(b *testing.B) {
	c := cluster.Need(b)
	s := openStore(b, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msgs := storetest.BenchMessages(b, b.N, 1)[0]
	cmd := childCmd(ctx, "latency", c.DSN(""), s.Schema(), childArgs{Total: b.N})
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
		b.Fatalf("latency child: %q %v", line, err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for _, m := range msgs {
		if _, err := s.Append(ctx, m); err != nil {
			b.Fatal(err)
		}
		returned := time.Now()
		line, err := r.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		f := strings.Fields(line)
		ns, _ := strconv.ParseInt(f[1], 10, 64)
		lat = append(lat, max(0, time.Unix(0, ns).Sub(returned)))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p int) float64 { return float64(lat[max(0, (len(lat)*p+99)/100-1)].Microseconds()) }
	b.ReportMetric(pct(50), "p50-µs")
	b.ReportMetric(pct(99), "p99-µs")
}

// latencyChild follows the store and prints "<seq> <unix nanos>" for each
// event as it receives it.
func latencyChild(ctx context.Context, s store.Store, a childArgs) error {
	w := bufio.NewWriter(stdout())
	fmt.Fprintln(w, "ready")
	w.Flush()
	n := 0
	for ev, err := range s.Follow(ctx, store.Query{}) {
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%d %d\n", ev.Seq, time.Now().UnixNano())
		w.Flush()
		if n++; n == a.Total {
			return nil
		}
	}
	return nil
}
