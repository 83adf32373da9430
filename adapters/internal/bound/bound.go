package bound

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// Limit is the largest encoded envelope Fit leaves: the event store's
// limit (store.DefaultMaxEventSize, the protocol's DefaultMaxBytes) less
// room for what the router adds on the way (signature, routing meta).
const Limit = protocol.DefaultMaxBytes - 16<<10

// Marker starts the note that ends a cut string.
const Marker = "… [truncated, "

// MetaTruncated is the meta key listing the cut strings.
const MetaTruncated = "truncated"

// MaxRole is the longest role Fit keeps.
const MaxRole = 256

// MaxListed bounds the entries of meta.truncated.
const MaxListed = 32

// ErrTooLarge: the message cannot fit by cutting text. Code TOO_LARGE.
var ErrTooLarge error = coded.New("the envelope is over the event store's limit even with its text cut", protocol.CodeTooLarge)

// Fit cuts m's text so that its encoding is at most limit bytes (Limit
// when limit ≤ 0), as the package doc says. It returns ErrTooLarge (with
// m's strings cut as far as they go) when that is not enough. m must be a
// message built in Go and never encoded (protocol.Encode would return the
// bytes it remembers); one that does not encode (it fails Validate) is
// left for the caller's Validate.
func Fit(m *protocol.Message, limit int) error {
	if limit <= 0 {
		limit = Limit
	}
	m.From.Role = cutRole(m.From.Role)
	for i := range m.To {
		m.To[i].Role = cutRole(m.To[i].Role)
	}
	size, err := encodedSize(m)
	if err != nil || size <= limit {
		return nil // an invalid message is for the caller's Validate to refuse
	}
	payload, err := decode(m.Payload)
	if err != nil {
		return err
	}
	meta := any(map[string]any(nil))
	if m.Meta != nil {
		mb, err := json.Marshal(m.Meta)
		if err != nil {
			return err
		}
		if meta, err = decode(mb); err != nil {
			return err
		}
	}
	var leaves []leaf
	collect(&payload, "/payload", &leaves)
	collect(&meta, "/meta", &leaves)
	if len(leaves) == 0 {
		return ErrTooLarge
	}
	sort.Slice(leaves, func(i, j int) bool { return len(*leaves[i].s) > len(*leaves[j].s) })
	orig := make([]string, len(leaves))
	for i, l := range leaves {
		orig[i] = *l.s
	}
	// Water filling: cut every string longer than keep to keep bytes,
	// with keep the largest that frees enough; retry with less when
	// escapes or the notes make the guess short.
	excess := size - limit + 2048
	for round := 0; round < 8; round++ {
		keep := level(orig, excess)
		var cut []any
		for i, l := range leaves {
			*l.s = orig[i]
			if len(orig[i]) > keep+len(Marker)+24 {
				*l.s = cutString(orig[i], keep)
				if len(cut) < MaxListed {
					cut = append(cut, map[string]any{"path": l.path, "bytes": len(orig[i])})
				}
			}
		}
		mm, _ := meta.(map[string]any)
		if len(cut) > 0 {
			if mm == nil {
				mm = map[string]any{}
			}
			mm[MetaTruncated] = cut
		}
		pb, err := json.Marshal(payload)
		if err != nil {
			return err
		}
		if err := m.SetPayload(json.RawMessage(pb)); err != nil {
			return err
		}
		if mm != nil {
			// Back to plain values: readers of meta expect strings, not
			// the *string leaves.
			mb, err := json.Marshal(mm)
			if err != nil {
				return err
			}
			v, err := decode(mb)
			if err != nil {
				return err
			}
			mm, _ = v.(map[string]any)
		}
		m.Meta = mm
		if size, err = encodedSize(m); err != nil || size <= limit {
			return nil
		}
		if keep == 0 {
			break
		}
		excess += size - limit + 4096
	}
	return ErrTooLarge
}

// level returns the largest length keep such that cutting every string
// longer than keep to keep frees at least excess bytes (0 when none does).
func level(strs []string, excess int) int {
	free := func(keep int) int {
		n := 0
		for _, s := range strs {
			if len(s) > keep {
				n += len(s) - keep
			}
		}
		return n
	}
	lo, hi := 0, len(strs[0]) // strs is sorted longest first
	if free(0) < excess {
		return 0
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if free(mid) >= excess {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// cutString keeps the first keep bytes of s (fewer, at a character
// boundary) and adds the note with s's size.
func cutString(s string, keep int) string {
	if keep > len(s) {
		keep = len(s)
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + Marker + strconv.Itoa(len(s)) + " bytes]"
}

func cutRole(r string) string {
	if len(r) <= MaxRole {
		return r
	}
	return cutString(r, MaxRole-len(Marker)-24)
}

type leaf struct {
	path string
	s    *string
}

// collect lists the string leaves under v, replacing each by a *string
// the caller can change (json.Marshal writes a *string as the string).
func collect(v *any, path string, out *[]leaf) {
	switch x := (*v).(type) {
	case string:
		p := new(string)
		*p = x
		*v = p
		*out = append(*out, leaf{path, p})
	case map[string]any:
		for k, e := range x {
			collect(&e, path+"/"+escape(k), out)
			x[k] = e
		}
	case []any:
		for i := range x {
			collect(&x[i], path+"/"+strconv.Itoa(i), out)
		}
	}
}

func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func decode(b []byte) (any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// encodedSize is the length of m's encoding. It encodes a shallow copy:
// protocol.Encode remembers the bytes in the message it encodes, and m is
// still to change. m must not have been encoded before.
func encodedSize(m *protocol.Message) (int, error) {
	c := *m
	b, err := protocol.Encode(&c)
	return len(b), err
}

// Clip cuts s to at most n bytes of valid UTF-8 (invalid bytes become
// U+FFFD first), ending in "…" when it cut: the bound of a text shown to
// people, such as a question asked for an outside system.
func Clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	const mark = "…"
	s = s[:max(n-len(mark), 0)]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + mark
}
