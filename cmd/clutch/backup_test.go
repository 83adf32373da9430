package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/store/boltstore"
)

// A backup restores to a store that passes check and holds the same
// events; restore refuses an existing file without --force and replaces
// it with it.
func TestBackupRestore(t *testing.T) {
	src, _, _ := demoFile(t, 2)
	want := readAll(t, src)
	dir := t.TempDir()
	bak := filepath.Join(dir, "backup.db")
	code, out, errs := clutch(t, "backup", "--db", src, "--out", bak, "--json")
	if code != exitOK {
		t.Fatalf("backup: %d %s", code, errs)
	}
	var rep backupReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.LastSeq != uint64(len(want)) || rep.Bytes <= 0 || !rep.Recorded {
		t.Fatalf("backup --json: %q (%v), want last_seq %d, recorded", out, err, len(want))
	}
	// The store file records the backup: stats names its time.
	code, out, errs = clutch(t, "stats", "--db", src)
	_, line, _ := strings.Cut(out, "last backup")
	line, _, _ = strings.Cut(line, "\n")
	if code != exitOK || !strings.Contains(line, time.Now().UTC().Format("2006-01-02T")) {
		t.Fatalf("stats after a backup: %d %q %s", code, out, errs)
	}
	if fi, err := os.Stat(bak); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != rep.Bytes {
		t.Fatalf("backup file: %v %v", fi, err)
	}

	db := filepath.Join(dir, "restored.db")
	if code, out, errs := clutch(t, "restore", "--from", bak, "--db", db); code != exitOK ||
		out != fmt.Sprintf("restored: %s from %s, events up to seq %d\n", db, bak, len(want)) {
		t.Fatalf("restore: %d %q %s", code, out, errs)
	}
	if fi, err := os.Stat(db); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("restored file: %v %v, want mode 0600", fi, err)
	}
	if code, out, errs := clutch(t, "check", "--db", db); code != exitOK || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("check of the restored file: %d %q %s", code, out, errs)
	}
	got := readAll(t, db)
	if len(got) != len(want) {
		t.Fatalf("restored %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Seq != want[i].Seq || !bytes.Equal(got[i].Raw, want[i].Raw) {
			t.Fatalf("event %d differs after the restore", want[i].Seq)
		}
	}

	// An existing file is kept without --force.
	other, _, _ := demoFile(t, 1)
	before, _ := os.ReadFile(other)
	code, _, errs = clutch(t, "restore", "--from", bak, "--db", other)
	if code != exitFailure || !strings.Contains(errs, "exists; to replace it with the backup, add --force") {
		t.Fatalf("restore over an existing file: %d %s", code, errs)
	}
	if after, _ := os.ReadFile(other); !bytes.Equal(before, after) {
		t.Fatal("restore without --force changed the existing file")
	}
	if code, _, errs := clutch(t, "restore", "--from", bak, "--db", other, "--force"); code != exitOK {
		t.Fatalf("restore --force: %d %s", code, errs)
	}
	if n := len(readAll(t, other)); n != len(want) {
		t.Fatalf("after restore --force the file holds %d events, want %d", n, len(want))
	}
	if left := files(t, filepath.Dir(other)); !slices.Equal(left, []string{"events.db"}) {
		t.Fatalf("restore left %v", left)
	}
}

// A damaged backup is refused, naming the damage, and the file in place
// stays as it was; so is a file that is no store at all.
func TestRestoreRefusesCorruptBackup(t *testing.T) {
	src, _, _ := demoFile(t, 2)
	dir := t.TempDir()
	bak := filepath.Join(dir, "backup.db")
	if code, _, errs := clutch(t, "backup", "--db", src, "--out", bak); code != exitOK {
		t.Fatalf("backup: %d %s", code, errs)
	}
	data, err := os.ReadFile(bak)
	if err != nil {
		t.Fatal(err)
	}
	// Damage an event's record: each copy of its bytes in the file (freed
	// pages may hold old copies), so the one in use is hit.
	raw := readAll(t, bak)[1].Raw
	hits := 0
	for off := 0; ; hits++ {
		i := bytes.Index(data[off:], raw)
		if i < 0 {
			break
		}
		data[off+i+len(raw)/2] ^= 0x01
		off += i + len(raw)
	}
	if hits == 0 {
		t.Fatal("the event's bytes are not in the backup file")
	}
	bad := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(bad, data, 0o600); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "text.db")
	os.WriteFile(text, []byte("not a store\n"), 0o600)

	db := filepath.Join(dir, "events.db")
	src2, _, _ := demoFile(t, 1)
	keep, _ := os.ReadFile(src2)
	os.WriteFile(db, keep, 0o600)
	for _, from := range []string{bad, text} {
		code, _, errs := clutch(t, "restore", "--from", from, "--db", db, "--force")
		if code != exitFailure || !strings.Contains(errs, "backup "+from+" is not a sound store, nothing was restored: boltstore: ") {
			t.Fatalf("restore of %s: %d %s", filepath.Base(from), code, errs)
		}
		if strings.Contains(errs, ".tmp-") {
			t.Fatalf("the refusal names the temporary copy: %s", errs)
		}
		if after, _ := os.ReadFile(db); !bytes.Equal(after, keep) {
			t.Fatalf("a refused restore of %s changed the file in place", filepath.Base(from))
		}
	}
	if left := files(t, dir); !slices.Equal(left, []string{"backup.db", "bad.db", "events.db", "text.db"}) {
		t.Fatalf("refused restores left %v", left)
	}
}

// backup needs the file: a process writing it holds it, and the command
// says who backs it up then; restore will not replace a file in use.
// Readers share it: backup copies it read-only then, unrecorded.
func TestBackupOfHeldFile(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "events.db")
	st, err := boltstore.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if code, _, errs := clutch(t, "backup", "--db", filepath.Join(dir, "none.db"), "--out", filepath.Join(dir, "n.db")); code != exitFailure ||
		!strings.Contains(errs, "none.db") {
		t.Fatalf("backup of a missing file: %d %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); !os.IsNotExist(err) {
		t.Fatalf("backup of a missing file created it: %v", err)
	}
	code, _, errs := clutch(t, "backup", "--db", db, "--out", filepath.Join(dir, "b.db"), "--lock-timeout", "50ms")
	if code != exitFailure || !strings.Contains(errs, "that process backs it up with its store's BackupFile") {
		t.Fatalf("backup of a held file: %d %s", code, errs)
	}
	// The writing process backs it up itself; restore will not replace
	// the file it holds.
	bak := filepath.Join(dir, "b.db")
	if _, err := st.BackupFile(context.Background(), bak); err != nil {
		t.Fatal(err)
	}
	code, _, errs = clutch(t, "restore", "--from", bak, "--db", db, "--force", "--lock-timeout", "50ms")
	if code != exitFailure || !strings.Contains(errs, "stop the process that has it open for writing") {
		t.Fatalf("restore over a held file: %d %s", code, errs)
	}
	if code, _, _ := clutch(t, "restore", "--db", db); code != exitUsage {
		t.Fatalf("restore without --from: exit %d, want %d", code, exitUsage)
	}
}

// With readers holding the file, backup copies it read-only: the backup
// is whole, and says it was not recorded.
func TestBackupBesideReaders(t *testing.T) {
	src, _, _ := demoFile(t, 1)
	want := readAll(t, src)
	ro, err := boltstore.Open(src, &boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	bak := filepath.Join(t.TempDir(), "b.db")
	code, out, errs := clutch(t, "backup", "--db", src, "--out", bak, "--lock-timeout", "50ms")
	if code != exitOK || !strings.HasSuffix(out, "; not recorded in the store: other readers hold it\n") {
		t.Fatalf("backup beside a reader: %d %q %s", code, out, errs)
	}
	if got := readAll(t, bak); len(got) != len(want) {
		t.Fatalf("the backup holds %d events, want %d", len(got), len(want))
	}
	if u, err := ro.Usage(t.Context()); err != nil || !u.LastBackup.IsZero() {
		t.Fatalf("a read-only backup recorded %v (%v)", u.LastBackup, err)
	}
}
