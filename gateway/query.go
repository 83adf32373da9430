package gateway

import (
	"net/url"
	"strconv"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The query parameters of each endpoint. Every parameter may appear once;
// an unknown one is refused (400), so that a misspelt filter is not taken
// for "no filter".

type pageQuery struct {
	After uint64 // after=
	Limit int    // limit=, DefaultPageLimit when absent
	Type  string // type=, a prefix of the message type
}

type listQuery struct {
	Before uint64 // before=
	Limit  int    // limit=, DefaultListLimit when absent
	System bool   // system=1: the reserved system runs too (admins only)
}

type streamQuery struct {
	Run, Thread, Task, Agent string
	Type                     string
	After                    uint64 // after=, or Last-Event-ID
	Now                      bool   // after=now: from the store's last seq when the stream opens
}

func badQuery(name, detail string) error {
	return coded.Wrap(ErrBadRequest, "query parameter "+name+": "+detail, nil)
}

// params checks that v has only the allowed names, each once.
func params(v url.Values, allowed ...string) error {
	for name, vals := range v {
		ok := false
		for _, a := range allowed {
			ok = ok || a == name
		}
		if !ok {
			return badQuery(clip(name), "unknown")
		}
		if len(vals) != 1 {
			return badQuery(clip(name), "given more than once")
		}
	}
	return nil
}

func parseSeq(v url.Values, name string) (uint64, error) {
	s, ok := v[name]
	if !ok {
		return 0, nil
	}
	n, err := parseUint(s[0])
	if err != nil {
		return 0, badQuery(name, "must be a seq (a decimal number)")
	}
	return n, nil
}

// parseUint parses a decimal uint64 without sign or leading spaces.
func parseUint(s string) (uint64, error) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseUint(s, 10, 64)
}

func parseLimit(v url.Values, def, max int) (int, error) {
	s, ok := v["limit"]
	if !ok {
		return def, nil
	}
	n, err := parseUint(s[0])
	if err != nil || n < 1 || n > uint64(max) {
		return 0, badQuery("limit", "must be 1 to "+strconv.Itoa(max))
	}
	return int(n), nil
}

func parseType(v url.Values) (string, error) {
	s := v.Get("type")
	if len(s) > 128 {
		return "", badQuery("type", "longer than 128 bytes")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return "", badQuery("type", "a message type prefix has letters, digits, '.', '_' and '-' only")
		}
	}
	return s, nil
}

func parsePageQuery(v url.Values) (pageQuery, error) {
	var q pageQuery
	if err := params(v, "after", "limit", "type"); err != nil {
		return q, err
	}
	var err error
	if q.After, err = parseSeq(v, "after"); err != nil {
		return q, err
	}
	if q.Limit, err = parseLimit(v, DefaultPageLimit, MaxPageLimit); err != nil {
		return q, err
	}
	q.Type, err = parseType(v)
	return q, err
}

func parseListQuery(v url.Values) (listQuery, error) {
	var q listQuery
	if err := params(v, "before", "limit", "system"); err != nil {
		return q, err
	}
	var err error
	if q.Before, err = parseSeq(v, "before"); err != nil {
		return q, err
	}
	if sys, ok := v["system"]; ok {
		switch sys[0] {
		case "1":
			q.System = true
		case "0":
		default:
			return q, badQuery("system", "must be 1 or 0")
		}
	}
	q.Limit, err = parseLimit(v, DefaultListLimit, MaxListLimit)
	return q, err
}

// parseStreamQuery parses the filters of /v1/stream and /v1/ws. A
// Last-Event-ID header (an SSE client's reconnect) wins over after=.
func parseStreamQuery(v url.Values, lastEventID string) (streamQuery, error) {
	var q streamQuery
	if err := params(v, "run", "thread", "task", "agent", "type", "after", "access_token"); err != nil {
		return q, err
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"run", &q.Run}, {"thread", &q.Thread}, {"task", &q.Task}, {"agent", &q.Agent}} {
		if s, ok := v[f.name]; ok {
			if !validID(s[0]) {
				return q, badQuery(f.name, "must be an id of 1 to "+strconv.Itoa(protocol.MaxIDLength)+" bytes")
			}
			*f.dst = s[0]
		}
	}
	var err error
	if q.Type, err = parseType(v); err != nil {
		return q, err
	}
	if a, ok := v["after"]; ok && a[0] == "now" {
		q.Now = true
	} else if q.After, err = parseSeq(v, "after"); err != nil {
		return q, err
	}
	if lastEventID != "" {
		n, err := parseUint(lastEventID)
		if err != nil {
			return q, coded.Wrap(ErrBadRequest, "Last-Event-ID must be a seq (a decimal number)", nil)
		}
		q.After, q.Now = n, false
	}
	return q, nil
}
