package rules

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ids(cs []Constraint) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func TestParseConstraints(t *testing.T) {
	md := "# Coding\n\nIntro text is not a constraint.\n\n" +
		"## Steps\n\n" +
		"1. Inspect the diff.\n" +
		"2. Suggest a commit message\n   that names the package.\n" +
		"   - nested detail\n\n" +
		"3) Run the tests.\n\n" +
		"## Style ##\n\nUse gofmt.\n\n### Detail\n\nStill Style.\n\n" +
		"```go\n## not a heading\n- not an item\n```\n\n" +
		"## Steps\n\n- duplicate title\n" +
		"# Appendix\n\n- not in an H2 section\n"
	cs := ParseConstraints(md)
	require.Equal(t, []string{"Steps", "Steps/1", "Steps/2", "Steps/3", "Style", "Steps (2)", "Steps (2)/1"}, ids(cs))
	assert.Equal(t, "Inspect the diff.", cs[1].Text)
	assert.Equal(t, "Suggest a commit message\nthat names the package.\n- nested detail", cs[2].Text)
	assert.Equal(t, "Run the tests.", cs[3].Text)
	assert.Equal(t, "Steps", cs[0].Name)
	assert.True(t, strings.HasPrefix(cs[0].Text, "1. Inspect the diff."))
	assert.Equal(t, "Style", cs[4].Name, "closing #s are not part of the title")
	assert.Contains(t, cs[4].Text, "### Detail\n\nStill Style.")
	assert.Contains(t, cs[4].Text, "## not a heading", "a fence keeps its lines")
	assert.Equal(t, "Steps", cs[5].Name)
	assert.Equal(t, HashContent([]byte(cs[1].Text)), cs[1].TextHash)
	assert.True(t, strings.HasPrefix(cs[1].TextHash, "sha256:") && len(cs[1].TextHash) == 7+64)
}

func TestParseConstraintsEdges(t *testing.T) {
	for _, tc := range []struct {
		name, md string
		want     []string
	}{
		{"empty", "", nil},
		{"no h2", "# T\n\ntext\n- item\n", nil},
		{"empty title skipped", "## \n- a\n", nil},
		{"h2 without space is text", "##Steps\n- a\n", nil},
		{"crlf", "## A\r\n\r\n- one\r\n- two\r\n", []string{"A", "A/1", "A/2"}},
		{"thematic break is not an item", "## A\n\n- - -\n* one\n", []string{"A", "A/1"}},
		{"lazy continuation", "## A\n- one\ncontinues\n\nafter\n- two\n", []string{"A", "A/1", "A/2"}},
		{"indented 4 is code, not item", "## A\n\n    - code\n", []string{"A"}},
		{"title with slash collides", "## A\n- x\n## A/1\n", []string{"A", "A/1", "A/1 (2)"}},
		{"tilde fence", "## A\n~~~\n- no\n~~~\n- yes\n", []string{"A", "A/1"}},
		{"unclosed fence", "## A\n```\n## B\n- no\n", []string{"A"}},
		{"h1 ends section", "## A\n- x\n# B\n- y\n", []string{"A", "A/1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(ParseConstraints(tc.md))
			if len(tc.want) == 0 {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}
	cs := ParseConstraints("## A\n- one\ncontinues\n\nafter\n- two\n")
	assert.Equal(t, "one\ncontinues", cs[1].Text)
}

// FuzzParseConstraints checks the parser's invariants on any input: no
// panic, unique ids, every list item under its section's id, hashes of
// the text.
func FuzzParseConstraints(f *testing.F) {
	for _, s := range []string{
		"## Steps\n1. a\n2. b\n", "## A\n```\n- x\n```\n- y\n", "## A\r\n- x\r\n", "## A ##\n\n- - -\n* a\n  b\nc\n",
		"## A\n## A\n## A (2)\n", "# T\n## \n##\n###### x\n", "## A\n\t- tab\n1234567890. long\n", "~~~\n## B\n~~~\n## C\ntext",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		cs := ParseConstraints(md)
		seen := map[string]bool{}
		section := ""
		for _, c := range cs {
			if seen[c.ID] {
				t.Fatalf("id %q twice", c.ID)
			}
			seen[c.ID] = true
			if c.TextHash != HashContent([]byte(c.Text)) {
				t.Fatalf("hash of %q", c.ID)
			}
			if c.Text != strings.TrimSpace(c.Text) {
				t.Fatalf("text of %q not trimmed", c.ID)
			}
			if c.Name == "" {
				t.Fatalf("empty name of %q", c.ID)
			}
			if strings.HasPrefix(c.ID, section+"/") && section != "" {
				continue
			}
			section = c.ID
		}
	})
}
