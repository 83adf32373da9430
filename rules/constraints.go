package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// Constraint is one referable entry of a rule or workflow
// (docs/protocol.md §15.7): a whole H2 section, or one top-level list item
// inside an H2 section.
type Constraint struct {
	// ID is what a reference names: the H2 title for a section, "Title/N"
	// for its N-th top-level list item (1-based).
	ID string `json:"id"`
	// Name is the H2 title.
	Name string `json:"name"`
	// Text is the section's body, or the list item's content without its
	// marker, trimmed.
	Text string `json:"text"`
	// TextHash is "sha256:<hex>" of Text.
	TextHash string `json:"textHash"`
}

// HashContent returns the content hash of data: "sha256:" and the
// lower-case hex SHA-256.
func HashContent(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParseConstraints returns the constraints of a rule or workflow document
// in document order, each section followed by its list items
// (docs/protocol.md §15.7). It never fails: text that is not an H2 section
// is simply not a constraint. Lines inside fenced code blocks are never
// headings or list items. A title that repeats an earlier id gets " (2)",
// " (3)" and so on, so every id of a document is unique.
func ParseConstraints(markdown string) []Constraint {
	lines := strings.Split(strings.ReplaceAll(markdown, "\r\n", "\n"), "\n")
	var out []Constraint
	seen := map[string]int{}
	unique := func(id string) string {
		if n := seen[id]; n > 0 {
			for {
				n++
				cand := id + " (" + strconv.Itoa(n) + ")"
				if seen[cand] == 0 {
					seen[id] = n
					seen[cand] = 1
					return cand
				}
			}
		}
		seen[id] = 1
		return id
	}
	var fence string // the open fence's marker run, "" outside a fence
	title := ""
	inSection := false
	var body []string
	flush := func() {
		if !inSection {
			return
		}
		inSection = false
		id := unique(title)
		text := strings.TrimSpace(strings.Join(body, "\n"))
		out = append(out, Constraint{ID: id, Name: title, Text: text, TextHash: HashContent([]byte(text))})
		for i, item := range listItems(body) {
			iid := unique(id + "/" + strconv.Itoa(i+1))
			out = append(out, Constraint{ID: iid, Name: title, Text: item, TextHash: HashContent([]byte(item))})
		}
	}
	for _, ln := range lines {
		if fence != "" {
			if closesFence(ln, fence) {
				fence = ""
			}
			if inSection {
				body = append(body, ln)
			}
			continue
		}
		if f := opensFence(ln); f != "" {
			fence = f
			if inSection {
				body = append(body, ln)
			}
			continue
		}
		if level, t, ok := atxHeading(ln); ok && level <= 2 {
			flush()
			if level == 2 && t != "" {
				title, inSection, body = t, true, body[:0]
			}
			continue
		}
		if inSection {
			body = append(body, ln)
		}
	}
	flush()
	return out
}

// indent returns the width of s's leading spaces and tabs (a tab counts
// as four) and the rest of the line.
func indent(s string) (int, string) {
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n, s[i:]
		}
	}
	return n, ""
}

// opensFence returns the marker run of a line that opens a fenced code
// block (three or more ` or ~, indented at most three spaces), else "".
func opensFence(ln string) string {
	n, rest := indent(ln)
	if n > 3 || len(rest) < 3 || (rest[0] != '`' && rest[0] != '~') {
		return ""
	}
	c := rest[0]
	i := 0
	for i < len(rest) && rest[i] == c {
		i++
	}
	if i < 3 || (c == '`' && strings.IndexByte(rest[i:], '`') >= 0) {
		return ""
	}
	return rest[:i]
}

// closesFence reports whether ln closes a fence opened with marker.
func closesFence(ln, marker string) bool {
	n, rest := indent(ln)
	if n > 3 || !strings.HasPrefix(rest, marker) {
		return false
	}
	return strings.TrimSpace(strings.TrimLeft(rest, marker[:1])) == ""
}

// atxHeading parses an ATX heading: level, title (closing #s removed,
// trimmed) and whether ln is one.
func atxHeading(ln string) (int, string, bool) {
	n, rest := indent(ln)
	if n > 3 || !strings.HasPrefix(rest, "#") {
		return 0, "", false
	}
	level := 0
	for level < len(rest) && rest[level] == '#' {
		level++
	}
	if level > 6 || (level < len(rest) && rest[level] != ' ' && rest[level] != '\t') {
		return 0, "", false
	}
	t := strings.TrimSpace(rest[level:])
	// A closing sequence of #s preceded by a space is not part of the title.
	if j := strings.TrimRight(t, "#"); j != t && (j == "" || strings.HasSuffix(j, " ") || strings.HasSuffix(j, "\t")) {
		t = strings.TrimSpace(j)
	}
	return level, t, true
}

// listMarker reports whether rest (a line without its indentation) starts
// with a list item marker, and the width of the marker and its space.
func listMarker(rest string) (int, bool) {
	if len(rest) >= 2 && (rest[0] == '-' || rest[0] == '*' || rest[0] == '+') && (rest[1] == ' ' || rest[1] == '\t') {
		return 2, true
	}
	i := 0
	for i < len(rest) && i < 9 && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(rest) && (rest[i] == '.' || rest[i] == ')') && (rest[i+1] == ' ' || rest[i+1] == '\t') {
		return i + 2, true
	}
	return 0, false
}

// isThematicBreak reports whether rest is a line of three or more -, * or
// _ (with spaces), which is not a list item.
func isThematicBreak(rest string) bool {
	s := strings.ReplaceAll(strings.ReplaceAll(rest, " ", ""), "\t", "")
	if len(s) < 3 {
		return false
	}
	return strings.Count(s, s[:1]) == len(s) && (s[0] == '-' || s[0] == '*' || s[0] == '_')
}

// listItems returns the content of each top-level list item of a section
// body (indented at most three spaces), in order: the marker removed,
// continuation lines dedented, trimmed. An item goes on over indented
// lines, blank lines followed by indented lines, and lazy continuation
// lines (unindented text right after a line of the item).
func listItems(body []string) []string {
	var items []string
	var cur []string
	open := false
	offset := 0
	blank := false
	var fence string
	end := func() {
		if open {
			items = append(items, strings.TrimSpace(strings.Join(cur, "\n")))
		}
		open, cur, blank = false, nil, false
	}
	for _, ln := range body {
		n, rest := indent(ln)
		if fence != "" { // a fence inside an item belongs to it
			if closesFence(ln, fence) {
				fence = ""
			}
			if open {
				cur = append(cur, dedent(ln, offset))
			}
			continue
		}
		if rest == "" {
			blank = true
			if open {
				cur = append(cur, "")
			}
			continue
		}
		if w, ok := listMarker(rest); ok && n <= 3 && (!open || n < offset) && !isThematicBreak(rest) {
			end()
			open, offset = true, n+w
			cur = append(cur, rest[w:])
			continue
		}
		if open {
			switch {
			case n >= 2 || (n > 0 && n >= offset):
				cur = append(cur, dedent(ln, offset))
				blank = false
			case !blank && !isThematicBreak(rest):
				cur = append(cur, rest) // lazy continuation
			default:
				end()
			}
		}
		if f := opensFence(ln); f != "" {
			fence = f
		}
	}
	end()
	return items
}

// dedent removes up to n columns of leading spaces and tabs from ln.
func dedent(ln string, n int) string {
	col := 0
	i := 0
	for i < len(ln) && col < n {
		switch ln[i] {
		case ' ':
			col++
		case '\t':
			col += 4
		default:
			return ln[i:]
		}
		i++
	}
	return ln[i:]
}
