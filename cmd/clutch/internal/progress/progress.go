package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Bar counts done units of total and draws them on one line.
type Bar struct {
	w     io.Writer // nil: draws nothing
	label string
	unit  string
	total atomic.Uint64
	done  atomic.Uint64
	start time.Time
	stop  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

// New starts a bar on w when w is a terminal; total 0 means unknown (a
// count and a rate, no percentage). Call Finish when done.
func New(w io.Writer, label, unit string, total uint64) *Bar {
	b := &Bar{label: label, unit: unit, start: time.Now(), stop: make(chan struct{})}
	b.total.Store(total)
	if !IsTerminal(w) {
		return b
	}
	b.w = w
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-t.C:
				b.draw()
			}
		}
	}()
	return b
}

// Add counts n more units done.
func (b *Bar) Add(n int) { b.done.Add(uint64(n)) }

// SetTotal changes the total.
func (b *Bar) SetTotal(n uint64) { b.total.Store(n) }

// Done returns the units counted.
func (b *Bar) Done() uint64 { return b.done.Load() }

// Finish draws the final state and ends the line. It is safe to call
// more than once.
func (b *Bar) Finish() {
	b.once.Do(func() {
		close(b.stop)
		b.wg.Wait()
		if b.w != nil {
			b.draw()
			fmt.Fprintln(b.w)
		}
	})
}

func (b *Bar) draw() {
	fmt.Fprint(b.w, "\r"+Line(b.label, b.unit, b.done.Load(), b.total.Load(), time.Since(b.start))+"\x1b[K")
}

// Line renders one state of a bar: label, a bar of 24 cells and the
// percentage when the total is known, the count and the rate.
func Line(label, unit string, done, total uint64, elapsed time.Duration) string {
	var s strings.Builder
	s.WriteString(label)
	if total > 0 {
		frac := min(float64(done)/float64(total), 1)
		cells := int(frac * 24)
		fmt.Fprintf(&s, " [%s%s] %3.0f%% %d/%d %s", strings.Repeat("=", cells), strings.Repeat(" ", 24-cells), frac*100, done, total, unit)
	} else {
		fmt.Fprintf(&s, " %d %s", done, unit)
	}
	if sec := elapsed.Seconds(); sec > 0 {
		fmt.Fprintf(&s, " (%.0f/s)", float64(done)/sec)
	}
	return s.String()
}
