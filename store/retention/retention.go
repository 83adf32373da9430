package retention

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/internal/eventio"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// ErrUnsupported: the store cannot remove runs (it has no store.Remover).
var ErrUnsupported error = coded.New("retention: the store cannot remove runs", protocol.CodeUnsupportedTask)

// ErrInvalidPolicy: a negative limit, or an Archive without a Dir.
var ErrInvalidPolicy error = coded.New("retention: invalid policy", protocol.CodeInvalidField)

// Policy says which ended runs a store lets go (see the package doc). A
// zero limit is no limit.
type Policy struct {
	// MaxAge removes the ended runs whose last event is older than MaxAge.
	MaxAge time.Duration
	// MaxRuns keeps at most MaxRuns ended runs: the most recently updated.
	MaxRuns int
	// MaxBytes removes ended runs, oldest first, until the runs of the
	// store (running, waiting and ended) hold at most MaxBytes bytes of
	// events (the sum of their store.Summary.Bytes).
	MaxBytes int64
	// Archive, when not nil, writes each run to a file before it goes.
	Archive *Archive
	// Note is kept in each tombstone: who or what applied the policy.
	Note string
}

// Archive says where and how runs are archived before they are removed.
type Archive struct {
	// Dir is the directory of the archive files; it is created when
	// missing.
	Dir string
	// CloudEvents writes CloudEvents 1.0 lines instead of JSON lines.
	CloudEvents bool
}

// Report is what an Apply did.
type Report struct {
	// Removed are the tombstones of the runs removed, in removal order.
	Removed []store.Tombstone
	// Ended counts the ended runs seen; Active the runs left because they
	// have not ended (running, waiting, or without tasks).
	Ended, Active int
	// Bytes is the stored size of the events removed.
	Bytes int64
}

// Validate reports whether p is well formed: ErrInvalidPolicy for a
// negative limit or an Archive without a Dir.
func (p Policy) Validate() error {
	switch {
	case p.MaxAge < 0:
		return coded.Wrap(ErrInvalidPolicy, "MaxAge is negative", nil)
	case p.MaxRuns < 0:
		return coded.Wrap(ErrInvalidPolicy, "MaxRuns is negative", nil)
	case p.MaxBytes < 0:
		return coded.Wrap(ErrInvalidPolicy, "MaxBytes is negative", nil)
	case p.Archive != nil && p.Archive.Dir == "":
		return coded.Wrap(ErrInvalidPolicy, "Archive has no Dir", nil)
	}
	return nil
}

// candidate is an ended run, its bytes and the rule that chose it (""
// when none has).
type candidate struct {
	id    string
	rule  string
	bytes int64
}

// batch is how many runs one RemoveRuns call removes.
const batch = 64

// Apply applies p to s once: it lists the runs, chooses the ended runs past
// p's limits, archives them when p asks, and removes them. The report says
// what went. On an error the runs removed before it stay removed and are in
// the report.
func Apply(ctx context.Context, s store.Store, p Policy) (Report, error) {
	rm := store.RemoverOf(s)
	if rm == nil {
		return Report{}, ErrUnsupported
	}
	return apply(ctx, s, p, rm)
}

// Plan is Apply without its effects: it chooses the runs Apply would
// remove now and reports them, each with the tombstone its removal would
// leave (Removed is the zero time, Archive the file it would write),
// reading each chosen run's events to count them. Nothing is written.
// The store needs no store.Remover.
func Plan(ctx context.Context, s store.Store, p Policy) (Report, error) {
	return apply(ctx, s, p, planner{s, store.ClockOf(s)})
}

// planner is the Remover of Plan: it counts what a removal would take.
type planner struct {
	s   store.Store
	now func() time.Time
}

func (pl planner) RemoveRuns(ctx context.Context, runs []string, why store.Removal) ([]store.Tombstone, error) {
	out := make([]store.Tombstone, 0, len(runs))
	for _, id := range runs {
		t := store.Tombstone{RunID: id, Policy: why.Policy, Note: why.Note, Archive: why.Archive}
		for ev, err := range pl.s.Read(ctx, store.Query{RunID: id}) {
			if err != nil {
				return nil, err
			}
			if t.Events == 0 {
				t.FirstSeq = ev.Seq
			}
			t.Events++
			t.LastSeq = ev.Seq
			t.Bytes += int64(len(ev.Raw))
		}
		out = append(out, t)
	}
	return out, nil
}

func (planner) Tombstone(context.Context, string) (store.Tombstone, error) {
	return store.Tombstone{}, ErrUnsupported
}

func (planner) Tombstones(context.Context, store.ListQuery) iter.Seq2[store.Tombstone, error] {
	return func(func(store.Tombstone, error) bool) {}
}

func apply(ctx context.Context, s store.Store, p Policy, rm store.Remover) (Report, error) {
	var rep Report
	if err := p.Validate(); err != nil {
		return rep, err
	}
	now := store.ClockOf(s)()
	// The seq the runs are chosen at: the store refuses a run with an
	// event past it (store.Removal.Through), which no listing or archive
	// of this Apply may have seen.
	through, err := s.LastSeq(ctx)
	if err != nil {
		return rep, err
	}
	var ended []candidate // newest first
	var kept int64        // the bytes of the runs no rule has chosen yet
	for sum, err := range store.Runs(ctx, s, store.ListQuery{}) {
		if err != nil {
			return rep, err
		}
		if store.Removable(sum) != nil {
			rep.Active++
			kept += sum.Bytes
			continue
		}
		c := candidate{id: sum.ID, bytes: sum.Bytes}
		switch {
		case p.MaxAge > 0 && now.Sub(sum.Updated) > p.MaxAge:
			c.rule = "max_age=" + p.MaxAge.String()
		case p.MaxRuns > 0 && len(ended) >= p.MaxRuns:
			c.rule = "max_runs=" + strconv.Itoa(p.MaxRuns)
		default:
			kept += c.bytes
		}
		ended = append(ended, c)
	}
	rep.Ended = len(ended)
	if p.MaxBytes > 0 {
		// After the age and count rules, the oldest of the ended runs
		// left go until what stays fits.
		rule := "max_bytes=" + strconv.FormatInt(p.MaxBytes, 10)
		for i := len(ended) - 1; i >= 0 && kept > p.MaxBytes; i-- {
			if ended[i].rule == "" {
				ended[i].rule = rule
				kept -= ended[i].bytes
			}
		}
	}
	// Oldest first: an interrupted Apply leaves the newest.
	var chosen []candidate
	for i := len(ended) - 1; i >= 0; i-- { // oldest first
		if ended[i].rule != "" {
			chosen = append(chosen, ended[i])
		}
	}
	if err := removeAll(ctx, rm, s, p, chosen, through, &rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// removeAll archives and removes runs, oldest first: without archives in
// batches of runs chosen by one rule (one store transaction each), with
// them one run at a time (each tombstone names its own file). The store
// refuses a run with an event past through.
func removeAll(ctx context.Context, rm store.Remover, s store.Store, p Policy, runs []candidate, through uint64, rep *Report) error {
	for len(runs) > 0 {
		n := 1
		for p.Archive == nil && n < len(runs) && n < batch && runs[n].rule == runs[0].rule {
			n++
		}
		if err := removeBatch(ctx, rm, s, p, runs[:n], through, rep); err != nil {
			return err
		}
		runs = runs[n:]
	}
	return nil
}

// removeBatch removes runs, all chosen by runs[0].rule, in one call (after
// archiving the one run when p archives). When the store finds one of
// them active, which refuses the whole call, they go one by one and the
// active ones are left and counted.
func removeBatch(ctx context.Context, rm store.Remover, s store.Store, p Policy, runs []candidate, through uint64, rep *Report) error {
	why := store.Removal{Policy: runs[0].rule, Note: p.Note, Through: through}
	if p.Archive != nil { // one run (removeAll)
		why.Archive = filepath.Join(p.Archive.Dir, p.Archive.FileName(runs[0].id))
		if _, planning := rm.(planner); !planning {
			if err := p.Archive.write(ctx, s, runs[0].id, why.Archive); err != nil {
				return err
			}
		}
	}
	ids := make([]string, len(runs))
	for i, c := range runs {
		ids[i] = c.id
	}
	ts, err := rm.RemoveRuns(ctx, ids, why)
	var active *store.RunActiveError
	switch {
	case errors.As(err, &active) && len(runs) > 1:
		for _, c := range runs {
			if err := removeBatch(ctx, rm, s, p, []candidate{c}, through, rep); err != nil {
				return err
			}
		}
		return nil
	case errors.As(err, &active):
		rep.Active++
		return nil
	case err != nil:
		return err
	}
	for _, t := range ts {
		rep.Removed = append(rep.Removed, t)
		rep.Bytes += t.Bytes
	}
	return nil
}

// FileName is the name of a run's archive file in Archive.Dir: the run id
// when it is a plain file name, else the id path-escaped, or hashed when
// that is longer than 200 bytes; then ".jsonl" or ".cloudevents.jsonl".
func (a *Archive) FileName(runID string) string {
	name := url.PathEscape(runID)
	if len(name) > 200 || strings.HasPrefix(name, ".") {
		sum := sha256.Sum256([]byte(runID))
		name = "run-" + hex.EncodeToString(sum[:16])
	}
	if a.CloudEvents {
		return name + ".cloudevents.jsonl"
	}
	return name + ".jsonl"
}

// write archives one run in the file path.
func (a *Archive) write(ctx context.Context, s store.Store, runID, path string) (err error) {
	if err := os.MkdirAll(a.Dir, 0o700); err != nil {
		return fmt.Errorf("retention: archive directory: %w", err)
	}
	f, err := os.CreateTemp(a.Dir, ".archive-*")
	if err != nil {
		return fmt.Errorf("retention: archive of run %q: %w", runID, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	format := eventio.JSONLines
	if a.CloudEvents {
		format = eventio.CloudEvents
	}
	w := eventio.NewWriter(f, format)
	for ev, rerr := range s.Read(ctx, store.Query{RunID: runID}) {
		if rerr != nil {
			return fmt.Errorf("retention: reading run %q: %w", runID, rerr)
		}
		if err := w.Write(ev); err != nil {
			return fmt.Errorf("retention: archive of run %q: %w", runID, err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("retention: archive of run %q: %w", runID, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("retention: archive of run %q: %w", runID, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("retention: archive of run %q: %w", runID, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("retention: archive of run %q: %w", runID, err)
	}
	if d, err := os.Open(a.Dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
