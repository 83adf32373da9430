package rules

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// benchDoc is a rule of about 2 KiB with five sections of four items.
func benchDoc(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Rule %d\n\n", i)
	for s := range 5 {
		fmt.Fprintf(&b, "## Section %d\n\nWhy this section matters for rule %d.\n\n", s, i)
		for it := range 4 {
			fmt.Fprintf(&b, "%d. Do step %d of section %d carefully, and say so.\n", it+1, it+1, s)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// benchLibrary publishes n rules in a library over a memstore, or over a
// boltstore file (fsync on) when durable, and returns a session and the
// rules' ids and hashes.
func benchLibrary(b *testing.B, n int, durable bool) (*Session, []string, map[string]string) {
	ctx := context.Background()
	var st store.Store
	var err error
	if durable {
		st, err = boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), nil)
	} else {
		st, err = memstore.New(nil)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	l, err := Open(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, n)
	hashes := map[string]string{}
	for i := range n {
		d, err := l.Publish(ctx, "agent:lead", Publish{Path: fmt.Sprintf("rules/R%02d.md", i), Content: benchDoc(i)})
		if err != nil {
			b.Fatal(err)
		}
		ids[i], hashes[d.ID] = d.ID, d.Hash
	}
	s, err := l.Session(ctx, "agent:bench", "bench")
	if err != nil {
		b.Fatal(err)
	}
	return s, ids, hashes
}

// BenchmarkLoad50 is memload of 50 rules, with every hash known (delta:
// constraints only) and with none known (content and constraints).
func BenchmarkLoad50(b *testing.B) {
	ctx := context.Background()
	for _, durable := range []bool{false, true} {
		s, ids, hashes := benchLibrary(b, 50, durable)
		unknown := map[string]string{}
		for _, id := range ids {
			unknown[id] = ""
		}
		for _, tc := range []struct {
			name  string
			known map[string]string
		}{{"known", hashes}, {"unknown", unknown}} {
			b.Run(storeName(durable)+"/"+tc.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					items, err := s.Load(ctx, ids, tc.known)
					if err != nil || len(items) != 50 {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func storeName(durable bool) string {
	if durable {
		return "bolt"
	}
	return "mem"
}

// BenchmarkRefer10 is memref of 10 references to 10 rules.
func BenchmarkRefer10(b *testing.B) {
	ctx := context.Background()
	for _, durable := range []bool{false, true} {
		s, ids, _ := benchLibrary(b, 10, durable)
		refs := make([]Ref, 10)
		for i := range refs {
			refs[i] = Ref{RuleID: ids[i], ConstraintID: fmt.Sprintf("Section %d/%d", i%5, i%4+1), Reason: "applied"}
		}
		b.Run(storeName(durable), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if n, err := s.Refer(ctx, refs); err != nil || n != 10 {
					b.Fatal(n, err)
				}
			}
		})
	}
}
