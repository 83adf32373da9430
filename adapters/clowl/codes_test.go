package clowl

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
)

var catalog = regexp.MustCompile(`^E0(0[1-9]|1[0-6])$`)

// TestCodeForEveryCode: the table has an entry for every code protocol
// defines, each a code of the CLowl v0.2 catalog (E001–E016).
func TestCodeForEveryCode(t *testing.T) {
	for _, c := range protocol.Codes() {
		e, ok := clowlCodes[c]
		if !ok {
			t.Errorf("%s has no CLowl code", c)
			continue
		}
		if !catalog.MatchString(e) || CodeFor(c) != e {
			t.Errorf("%s maps to %q (CodeFor %q)", c, e, CodeFor(c))
		}
	}
	if len(clowlCodes) != len(protocol.Codes()) {
		t.Errorf("%d CLowl codes for %d codes", len(clowlCodes), len(protocol.Codes()))
	}
	for _, c := range []protocol.Code{"NOPE", ""} {
		if e := CodeFor(c); e != "E009" {
			t.Errorf("CodeFor(%q) = %s, want E009", c, e)
		}
	}
	// Pinned here too, so a change to both the docs and the table still
	// fails.
	for c, want := range map[protocol.Code]string{
		protocol.CodeDuplicateKey: "E001", protocol.CodeToolUnavailable: "E007", protocol.CodeUnsupportedVersion: "E014",
		protocol.CodeContextUnavailable: "E003", protocol.CodeUnauthorized: "E002", protocol.CodeInterrupted: "E009",
	} {
		if got := CodeFor(c); got != want {
			t.Errorf("CodeFor(%s) = %s, want %s", c, got, want)
		}
	}
}

// TestProtocolCode: every CLowl code comes back as a code that goes out as
// it again, codes with a single meaning round-trip, and an unknown code is
// INTERNAL.
func TestProtocolCode(t *testing.T) {
	for i := 1; i <= 16; i++ {
		e := fmt.Sprintf("E%03d", i)
		c := ProtocolCode(e)
		if !c.Known() || CodeFor(c) != e {
			t.Errorf("%s → %s → %s", e, c, CodeFor(c))
		}
	}
	for _, c := range []protocol.Code{protocol.CodeTimeout, protocol.CodeCancelled, protocol.CodeBudget, protocol.CodeCycle, protocol.CodePolicyDenied, protocol.CodeNoMatch, protocol.CodeContextUnavailable, protocol.CodeUnsupportedVersion} {
		if back := ProtocolCode(CodeFor(c)); back != c {
			t.Errorf("%s → %s → %s", c, CodeFor(c), back)
		}
	}
	for _, e := range []string{"E999", "E000", "E017", ""} {
		if c := ProtocolCode(e); c != protocol.CodeInternal {
			t.Errorf("ProtocolCode(%q) = %s", e, c)
		}
	}
}

// TestCodesMatchDocs: CodeFor gives the CLowl column of the code table of
// docs/protocol.md §5.4, and CodeFor and ProtocolCode the columns of the
// table of §14.6.
func TestCodesMatchDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	codeTable := docTable(t, string(doc), "| code | CLowl | HTTP | retryable | meaning |")
	seen := map[protocol.Code]bool{}
	for _, cols := range codeTable {
		c := protocol.Code(strings.Trim(cols[0], "`"))
		seen[c] = true
		if got := CodeFor(c); got != cols[1] {
			t.Errorf("CodeFor(%s) = %s, docs/protocol.md §5.4 says %s", c, got, cols[1])
		}
	}
	for _, c := range protocol.Codes() {
		if !seen[c] {
			t.Errorf("%s is not in the table of docs/protocol.md §5.4", c)
		}
	}
	catalogTable := docTable(t, string(doc), "| CLowl | category | inbound code | codes that go out as it |")
	if len(catalogTable) != 16 {
		t.Errorf("docs/protocol.md §14.6 lists %d CLowl codes, want 16", len(catalogTable))
	}
	for _, cols := range catalogTable {
		e := cols[0]
		if got, want := ProtocolCode(e), protocol.Code(strings.Trim(cols[2], "`")); got != want {
			t.Errorf("ProtocolCode(%s) = %s, docs/protocol.md §14.6 says %s", e, got, want)
		}
		for _, out := range strings.Split(cols[3], ",") {
			c := protocol.Code(strings.Trim(strings.TrimSpace(out), "`"))
			if got := CodeFor(c); got != e {
				t.Errorf("CodeFor(%s) = %s, docs/protocol.md §14.6 says %s", c, got, e)
			}
		}
	}
}

// docTable returns the rows of the Markdown table with header in doc whose
// first column is a code (`X` or E0nn), each row's columns trimmed.
func docTable(t *testing.T, doc, header string) [][]string {
	t.Helper()
	i := strings.Index(doc, header)
	if i < 0 {
		t.Fatalf("docs/protocol.md has no table %q", header)
	}
	var rows [][]string
	for _, line := range strings.Split(doc[i:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cols := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cols {
			cols[j] = strings.TrimSpace(cols[j])
		}
		if !strings.HasPrefix(cols[0], "`") && !strings.HasPrefix(cols[0], "E") {
			continue // a group heading
		}
		rows = append(rows, cols)
	}
	return rows
}
