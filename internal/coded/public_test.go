package coded

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
)

func TestPublic(t *testing.T) {
	notFound := New("gateway: not found", protocol.CodeNotFound)
	unknown := New("schema: unknown payload type", protocol.CodeValidation)
	rejected := New("router: request payload rejected", protocol.CodeValidation)
	for _, c := range []struct {
		err  error
		want string
	}{
		{Wrap(notFound, "no run run_x", nil), "no run run_x"},
		{notFound, "not found"},
		{Wrap(notFound, "", nil), "not found"},
		{Wrap(rejected, "", Wrap(unknown, `"x.y.v2"`, nil)), `"x.y.v2"`},
		{Wrap(rejected, "the answer", errors.New("schema: x.y.v1: 1 violation: /a: required: a is required")),
			"the answer: x.y.v1: 1 violation: /a: required: a is required"},
		{fmt.Errorf("router: closed: %w", errors.New("store: store closed")), "closed: store closed"},
		{errors.New("payload: invalid JSON"), "payload: invalid JSON"}, // not a package: kept
		{errors.New("boltstore: corrupt file: schema: x"), "corrupt file: x"},
		{nil, ""},
	} {
		if got := Public(c.err); got != c.want {
			t.Errorf("Public(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestPackagesListed: every public package of the module is known as a
// prefix, so a new package's errors lose theirs too. Internal packages
// are listed by hand when their errors reach a person; ui, driver and
// externalstore name no errors of their own.
func TestPackagesListed(t *testing.T) {
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		skip := map[string]bool{"node_modules": true, "testdata": true, "internal": true, "bench": true, "examples": true, "ui": true, "driver": true, "external": true}
		if d.IsDir() && p != "../.." && (skip[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.Name() != "doc.go" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(line, "package "); ok {
				if name = strings.TrimSpace(name); name != "main" && name != "clutch" && !packages[name] {
					t.Errorf("%s: package %s is not in packages", p, name)
				}
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
