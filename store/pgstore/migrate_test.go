package pgstore

import "testing"

// The embedded migrations are numbered 1, 2, 3... (migrations panics
// otherwise) and SchemaVersion is the last.
func TestMigrationsNumbered(t *testing.T) {
	if n := len(migrations()); n != SchemaVersion {
		t.Fatalf("%d migrations, SchemaVersion %d", n, SchemaVersion)
	}
}
