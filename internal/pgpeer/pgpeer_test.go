package pgpeer

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestStartStop(t *testing.T) {
	c := StartT(t)
	if _, err := os.Stat(filepath.Join(c.Dir(), ".s.PGSQL.5432")); err != nil {
		t.Fatalf("no unix socket: %v", err)
	}
	if err := c.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c.Dir(), ".s.PGSQL.5432")); err != nil {
		t.Fatalf("no unix socket after restart: %v", err)
	}
	dir := c.Dir()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("folder left behind: %v", err)
	}
}
