package schema

import (
	"encoding/json"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The built-in types' MarshalJSON methods write their JSON directly with
// these appenders instead of going through encoding/json's reflection. The
// output is byte for byte what encoding/json (v1) writes for the same
// struct with nil slices and maps replaced by empty ones: the same member
// order and omissions, strings escaped the same way (<, > and & as \u003c,
// \u003e, \u0026; U+2028 and U+2029 escaped; invalid UTF-8 as \ufffd) and
// floats formatted the same way.

// jsonSafe marks the bytes encoding/json writes as they are: its
// htmlSafeSet, within ASCII.
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		switch c {
		case '"', '\\', '<', '>', '&':
		default:
			t[c] = true
		}
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i = skipJSONSafe(s, i); i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default: // other control characters, <, >, &
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// skipJSONSafe returns the index of the first byte of s from i on that
// jsonSafe does not mark, eight bytes at a time (see skipSafe).
func skipJSONSafe(s string, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for i+8 <= len(s) {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		q, b := x^('"'*ones), x^('\\'*ones)
		lt, gt, amp := x^('<'*ones), x^('>'*ones), x^('&'*ones)
		m := ((x - 0x20*ones) &^ x) | x | // control characters, not ASCII
			((q - ones) &^ q) | ((b - ones) &^ b) |
			((lt - ones) &^ lt) | ((gt - ones) &^ gt) | ((amp - ones) &^ amp)
		if m &= highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(s) && jsonSafe[s[i]] {
		i++
	}
	return i
}

// appendFloat appends f as encoding/json formats a float64; NaN and
// infinities give the error encoding/json gives.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, &json.UnsupportedValueError{Value: reflect.ValueOf(f), Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// appendMember appends "name": after a '{' or a previous member.
func appendMember(b []byte, name string) []byte {
	if c := b[len(b)-1]; c != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// appendStrings appends ss as a JSON array; nil is [].
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// sizeStrings estimates the encoded size of ss (before escaping).
func sizeStrings(ss []string) int {
	n := 2
	for _, s := range ss {
		n += len(s) + 3
	}
	return n
}

func (p ResearchQuery) appendJSON(b []byte) []byte {
	b = appendString(appendMember(append(b, '{'), "query"), p.Query)
	if p.Context != "" {
		b = appendString(appendMember(b, "context"), p.Context)
	}
	if p.MaxSources != 0 {
		b = strconv.AppendInt(appendMember(b, "max_sources"), int64(p.MaxSources), 10)
	}
	return append(b, '}')
}

func (p ResearchQuery) size() int {
	return 48 + len(p.Query) + len(p.Context)
}

func (p ResearchSummary) appendJSON(b []byte) []byte {
	b = append(b, '{')
	if p.Title != "" {
		b = appendString(appendMember(b, "title"), p.Title)
	}
	b = appendStrings(appendMember(b, "findings"), p.Findings)
	b = appendStrings(appendMember(b, "citations"), p.Citations)
	return append(b, '}')
}

func (p ResearchSummary) size() int {
	return 48 + len(p.Title) + sizeStrings(p.Findings) + sizeStrings(p.Citations)
}

func (p ResearchSources) appendJSON(b []byte) ([]byte, error) {
	b = append(appendMember(append(b, '{'), "sources"), '[')
	for i, s := range p.Sources {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(appendMember(append(b, '{'), "url"), s.URL)
		if s.Title != "" {
			b = appendString(appendMember(b, "title"), s.Title)
		}
		if s.Excerpt != "" {
			b = appendString(appendMember(b, "excerpt"), s.Excerpt)
		}
		b = append(b, '}')
	}
	b = append(appendMember(append(b, ']'), "relevance_scores"), '{')
	keys := make([]string, 0, len(p.RelevanceScores))
	for k := range p.RelevanceScores {
		keys = append(keys, k)
	}
	slices.Sort(keys) // encoding/json sorts map keys
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendString(b, k), ':')
		if b, err = appendFloat(b, p.RelevanceScores[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}', '}'), nil
}

func (p ResearchSources) size() int {
	n := 48
	for _, s := range p.Sources {
		n += 40 + len(s.URL) + len(s.Title) + len(s.Excerpt)
	}
	for k := range p.RelevanceScores {
		n += len(k) + 28
	}
	return n
}

func (p CodeOutput) appendJSON(b []byte) []byte {
	b = append(appendMember(append(b, '{'), "files"), '[')
	for i, f := range p.Files {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(appendMember(append(b, '{'), "path"), f.Path)
		if f.Content != "" {
			b = appendString(appendMember(b, "content"), f.Content)
		}
		if f.Ref != "" {
			b = appendString(appendMember(b, "ref"), f.Ref)
		}
		b = append(b, '}')
	}
	b = appendString(appendMember(append(b, ']'), "language"), p.Language)
	b = strconv.AppendBool(appendMember(b, "tests_passed"), p.TestsPassed)
	return append(b, '}')
}

func (p CodeOutput) size() int {
	n := 64 + len(p.Language)
	for _, f := range p.Files {
		n += 40 + len(f.Path) + len(f.Content) + len(f.Ref)
	}
	return n
}

func (p CodeReview) appendJSON(b []byte) []byte {
	b = append(appendMember(append(b, '{'), "findings"), '[')
	for i, f := range p.Findings {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(appendMember(append(b, '{'), "message"), f.Message)
		if f.Path != "" {
			b = appendString(appendMember(b, "path"), f.Path)
		}
		if f.Line != 0 {
			b = strconv.AppendInt(appendMember(b, "line"), int64(f.Line), 10)
		}
		if f.Severity != "" {
			b = appendString(appendMember(b, "severity"), string(f.Severity))
		}
		b = append(b, '}')
	}
	b = appendString(appendMember(append(b, ']'), "severity"), string(p.Severity))
	if p.PatchRef != "" {
		b = appendString(appendMember(b, "patch_ref"), p.PatchRef)
	}
	return append(b, '}')
}

func (p CodeReview) size() int {
	n := 64 + len(p.Severity) + len(p.PatchRef)
	for _, f := range p.Findings {
		n += 64 + len(f.Message) + len(f.Path) + len(f.Severity)
	}
	return n
}

func (p ReviewFeedback) appendJSON(b []byte) []byte {
	b = appendString(appendMember(append(b, '{'), "decision"), string(p.Decision))
	b = appendString(appendMember(b, "comments"), p.Comments)
	b = appendStrings(appendMember(b, "blocking_issues"), p.BlockingIssues)
	return append(b, '}')
}

func (p ReviewFeedback) size() int {
	return 64 + len(p.Decision) + len(p.Comments) + sizeStrings(p.BlockingIssues)
}
