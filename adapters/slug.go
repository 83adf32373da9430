package adapters

import "strings"

// MaxSlug is the longest slug Slug returns.
const MaxSlug = 100

// Slug turns an outside name (an agent's display name, a graph, a crew
// role, a host) into a segment of a Clutch agent id: lower case, letters,
// digits, '_' and '.' kept, every run of anything else one '-', no '-' at
// either end, at most MaxSlug bytes. It returns "" for a name with nothing
// to keep; the caller picks a fallback.
func Slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if b.Len() >= MaxSlug {
			break
		}
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimRight(b.String(), "-")
}
