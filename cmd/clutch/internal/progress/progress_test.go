package progress_test

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/progress"
)

func TestLine(t *testing.T) {
	for _, c := range []struct {
		done, total uint64
		want        string
	}{
		{0, 100, "export [                        ]   0% 0/100 events (0/s)"},
		{50, 100, "export [============            ]  50% 50/100 events (25/s)"},
		{150, 100, "export [========================] 100% 150/100 events (75/s)"},
		{42, 0, "export 42 events (21/s)"},
	} {
		if got := progress.Line("export", "events", c.done, c.total, 2*time.Second); got != c.want {
			t.Errorf("Line(%d, %d) = %q, want %q", c.done, c.total, got, c.want)
		}
	}
}

// A bar over anything but a terminal draws nothing.
func TestNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	b := progress.New(&buf, "import", "events", 10)
	b.Add(3)
	b.Add(4)
	b.Finish()
	b.Finish()
	if buf.Len() != 0 {
		t.Fatalf("drew %q to a buffer", buf.String())
	}
	if b.Done() != 7 {
		t.Fatalf("Done = %d", b.Done())
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if progress.IsTerminal(f) {
		t.Fatal("a regular file is a terminal")
	}
}

func ExampleLine() {
	fmt.Println(progress.Line("check", "events", 2500, 10000, time.Second))
	// Output: check [======                  ]  25% 2500/10000 events (2500/s)
}
