package driver_test

import (
	"math/rand/v2"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/driver"
	"github.com/clutchprotocol/clutch/store/storetest"
)

// BenchmarkPrepare prepares one new message per op, as each Append does:
// the messages of storetest.Traffic (~1.1 KiB, payload bytes set directly),
// encoded afresh each time.
func BenchmarkPrepare(b *testing.B) {
	ids := protocol.NewIDs(&protocol.IDOptions{Entropy: rand.NewChaCha8([32]byte{42})})
	tr := storetest.NewTraffic(ids, 0, []protocol.Type{protocol.TypeTaskRequest, protocol.TypeTaskProgress, protocol.TypeTaskResult}, 0)
	msgs := make([]*protocol.Message, 1024)
	for i := range msgs {
		msgs[i] = tr.Next()
	}
	var buf [1]driver.Entry
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m := msgs[i%len(msgs)]
		i++
		m.Reset()
		if _, err := driver.Prepare(buf[:0], []*protocol.Message{m}, 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}
