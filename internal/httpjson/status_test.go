package httpjson

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
)

// TestStatusEveryCode: the table has an entry for every code protocol
// defines, and each is an HTTP error status.
func TestStatusEveryCode(t *testing.T) {
	for _, c := range protocol.Codes() {
		s, ok := statuses[c]
		if !ok {
			t.Errorf("%s has no HTTP status", c)
			continue
		}
		if s < 400 || s > 599 || Status(c) != s {
			t.Errorf("%s maps to HTTP %d (Status %d)", c, s, Status(c))
		}
	}
	if len(statuses) != len(protocol.Codes()) {
		t.Errorf("%d statuses for %d codes", len(statuses), len(protocol.Codes()))
	}
	for _, c := range []protocol.Code{"NOPE", ""} {
		if s := Status(c); s != 500 {
			t.Errorf("Status(%q) = %d, want 500", c, s)
		}
	}
}

// TestStatusMatchesDocs: Status answers the HTTP column of the code table
// of docs/protocol.md §5.4, for every code of the table and every code
// protocol defines.
func TestStatusMatchesDocs(t *testing.T) {
	rows := docCodeTable(t)
	for _, c := range protocol.Codes() {
		if _, ok := rows[c]; !ok {
			t.Errorf("%s is not in the table of docs/protocol.md §5.4", c)
		}
	}
	for c, cols := range rows {
		want, err := strconv.Atoi(cols[1])
		if err != nil {
			t.Fatalf("%s: HTTP column %q", c, cols[1])
		}
		if got := Status(c); got != want {
			t.Errorf("Status(%s) = %d, docs/protocol.md says %d", c, got, want)
		}
	}
	// A few pinned here too, so a change to both the docs and the table
	// still fails.
	for c, want := range map[protocol.Code]int{
		protocol.CodeDuplicateKey: 400, protocol.CodeTooLarge: 413, protocol.CodeUnauthorized: 401,
		protocol.CodeCancelled: 499, protocol.CodeRateLimited: 429, protocol.CodeCapacity: 503,
		protocol.CodeInternal: 500, protocol.CodeDependency: 424,
	} {
		if got := Status(c); got != want {
			t.Errorf("Status(%s) = %d, want %d", c, got, want)
		}
	}
}

// docCodeTable reads the code table of docs/protocol.md §5.4: each code
// with its CLowl, HTTP, retryable and meaning columns.
func docCodeTable(t *testing.T) map[protocol.Code][]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "| code | CLowl | HTTP | retryable | meaning |")
	if i < 0 {
		t.Fatal("docs/protocol.md has no code table")
	}
	rows := map[protocol.Code][]string{}
	for _, line := range strings.Split(s[i:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cols := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cols {
			cols[j] = strings.TrimSpace(cols[j])
		}
		if len(cols) != 5 || !strings.HasPrefix(cols[0], "`") {
			continue // a group heading
		}
		rows[protocol.Code(strings.Trim(cols[0], "`"))] = cols[1:]
	}
	if len(rows) == 0 {
		t.Fatal("the code table of docs/protocol.md has no rows")
	}
	return rows
}
