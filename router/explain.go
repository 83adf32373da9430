package router

import (
	"math"
	"strconv"
	"strings"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
)

// A routing.decision says why twice (docs/protocol.md §4.3): its reason,
// the machine form other code matches on ("matched
// requires[skill:research], best preference score 0.50"), and its
// explanation, the same in plain English for people ("Ken chosen over
// Research 2: both have skill:research; Ken matches the preferred tag
// fintech (score 0.5 vs 0)."). Both are built here, appended into one
// buffer and made one string, so a decision costs one allocation for
// both; no fmt on this path.

// maxNamed bounds the agents, rejections and preferences an explanation
// names; the rest are counted ("and 2 more").
const maxNamed = 3

// rejected is one rejection kept for the explanation (see match.reject).
type rejected struct {
	ref  int32
	kind rejection
}

// explain returns the reason and the explanation of m's decision, routed
// for a request with the given capability requirements, explicit
// recipients (targets) and preferences (ps); weighed reports whether the
// preferences carry any weight (else every score is 1 and scores decide
// nothing).
func (r *Router) explain(m *match, requires, targets []string, ps []pref, weighed bool) (reason, explanation string) {
	var buf [384]byte
	b := appendReason(buf[:0], m, requires)
	n := len(b)
	b = appendExplanation(b, m, requires, targets, ps, weighed)
	s := string(b)
	return s[:n], s[n:]
}

// appendReason appends the reason of §4.3: how the candidates were found
// and what decided.
func appendReason(b []byte, m *match, requires []string) []byte {
	if m.explicit {
		b = append(b, "explicit recipient"...)
	} else if len(requires) > 0 {
		b = append(b, "matched requires["...)
		for i, c := range requires {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = append(b, c...)
		}
		b = append(b, ']')
	} else {
		b = append(b, "no requirements"...)
	}
	if len(m.candidates) == 1 {
		return append(b, ", only eligible candidate"...)
	}
	first, second := m.candidates[0], m.candidates[1]
	switch {
	case first.score != second.score:
		b = append(b, ", best preference score "...)
		b = appendFixed2(b, first.score)
	case first.load != second.load:
		b = append(b, ", lowest load ("...)
		b = strconv.AppendInt(b, int64(first.load), 10)
		b = append(b, " in flight)"...)
	case first.success != second.success:
		b = append(b, ", best recent success rate "...)
		b = appendFixed2(b, first.success)
	default:
		b = append(b, ", round robin among "...)
		b = strconv.AppendInt(b, int64(m.tied), 10)
		b = append(b, " equal candidates"...)
	}
	return b
}

// appendExplanation appends the explanation: one or two sentences naming
// the agents by their display names.
func appendExplanation(b []byte, m *match, requires, targets []string, ps []pref, weighed bool) []byte {
	cs := m.candidates
	winner := displayName(cs[0].a, cs[0].a.ID())
	if len(cs) == 1 {
		switch {
		case m.explicit && m.named == 1:
			b = append(b, "Sent to "...)
			b = append(b, winner...)
			b = append(b, ", the named recipient."...)
		case m.explicit:
			b = append(b, "Sent to "...)
			b = append(b, winner...)
			b = append(b, ", the only available one of the "...)
			b = strconv.AppendInt(b, int64(m.named), 10)
			b = append(b, " named recipients."...)
		case len(requires) > 0:
			b = append(b, winner...)
			b = append(b, " is the only available agent with "...)
			b = appendList(b, requires)
			b = append(b, '.')
		default:
			b = append(b, "Any agent could take it; "...)
			b = append(b, winner...)
			b = append(b, " is the only one available."...)
		}
		return appendRejections(b, m, requires, targets)
	}
	if m.tied > 1 {
		return appendTie(b, m, winner, requires, weighed)
	}
	first, second := &cs[0], &cs[1]
	runnerUp := displayName(second.a, second.a.ID())
	b = append(b, winner...)
	b = append(b, " chosen over "...)
	b = append(b, runnerUp...)
	if others := len(cs) - 2; others > 0 {
		b = append(b, " and "...)
		b = strconv.AppendInt(b, int64(others), 10)
		b = append(b, " other"...)
		if others > 1 {
			b = append(b, 's')
		}
	}
	b = append(b, ": "...)
	all := "all"
	if len(cs) == 2 {
		all = "both"
	}
	switch {
	case m.explicit:
		b = append(b, all...)
		b = append(b, " were named recipients"...)
	case len(requires) > 0:
		b = append(b, all...)
		b = append(b, " have "...)
		b = appendList(b, requires)
	default:
		b = append(b, "any agent could take it"...)
	}
	b = append(b, "; "...)
	if first.score != second.score {
		b = appendPreferences(b, winner, runnerUp, first, second, ps)
		return append(b, '.')
	}
	if weighed {
		b = append(b, "equal preference score ("...)
		b = appendScore(b, first.score)
		b = append(b, "); "...)
	}
	if first.load != second.load {
		b = append(b, winner...)
		b = append(b, " has fewer tasks in flight ("...)
		b = strconv.AppendInt(b, int64(first.load), 10)
		b = append(b, " vs "...)
		b = strconv.AppendInt(b, int64(second.load), 10)
		return append(b, ")."...)
	}
	b = append(b, "equal load ("...)
	b = strconv.AppendInt(b, int64(first.load), 10)
	b = append(b, " in flight); "...)
	b = append(b, winner...)
	b = append(b, " has the better recent success rate ("...)
	b = appendPercent(b, first.success)
	b = append(b, " vs "...)
	b = appendPercent(b, second.success)
	return append(b, ")."...)
}

// appendTie explains a round robin among the m.tied candidates equal on
// every key.
func appendTie(b []byte, m *match, winner string, requires []string, weighed bool) []byte {
	if !m.explicit && len(requires) == 0 {
		b = append(b, "Any agent could take it; "...)
	}
	n := min(m.tied, maxNamed)
	entries := n
	if m.tied > n {
		entries++ // "and k more"
	}
	for i, c := range m.candidates[:n] {
		b = appendSep(b, i, entries)
		if i == 0 {
			b = append(b, winner...)
		} else {
			b = append(b, displayName(c.a, c.a.ID())...)
		}
	}
	if more := m.tied - n; more > 0 {
		b = appendSep(b, n, entries)
		b = strconv.AppendInt(b, int64(more), 10)
		b = append(b, " more"...)
	}
	if m.explicit {
		b = append(b, " are named recipients equal on "...)
	} else {
		b = append(b, " are equal on "...)
		if len(requires) > 0 {
			b = appendList(b, requires)
			b = append(b, ", "...)
		}
	}
	if weighed {
		b = append(b, "preference score, "...)
	}
	b = append(b, "load and success rate; "...)
	b = append(b, winner...)
	return append(b, " was picked in turn (round robin)."...)
}

// appendPreferences says which preferences made the winner's score
// higher than the runner-up's: those it meets and the runner-up does not
// (and the runner-up's own, when it meets some the winner does not).
func appendPreferences(b []byte, winner, runnerUp string, first, second *scored, ps []pref) []byte {
	only, theirs := first.met&^second.met, second.met&^first.met
	b = append(b, winner...)
	switch {
	case only == 0: // preferences past the 64 recorded
		b = append(b, " has the better preference score ("...)
		b = appendScore(b, first.score)
		b = append(b, " vs "...)
		b = appendScore(b, second.score)
		return append(b, ')')
	case second.met == 0:
		b = append(b, " matches the preferred "...)
		b = appendPrefs(b, only, ps)
	case theirs == 0:
		b = append(b, " also matches the preferred "...)
		b = appendPrefs(b, only, ps)
	default:
		b = append(b, " matches the preferred "...)
		b = appendPrefs(b, only, ps)
		b = append(b, ", "...)
		b = append(b, runnerUp...)
		b = append(b, " the preferred "...)
		b = appendPrefs(b, theirs, ps)
	}
	b = append(b, " (score "...)
	b = appendScore(b, first.score)
	b = append(b, " vs "...)
	b = appendScore(b, second.score)
	return append(b, ')')
}

// appendPrefs appends the preferences of mask (bit i for ps[i]) as words
// ("tag fintech and tool browser"), each said once, at most maxNamed.
func appendPrefs(b []byte, mask uint64, ps []pref) []byte {
	var named [maxNamed]int
	n, total := 0, 0
	for i := range min(len(ps), 64) {
		if mask&(1<<i) == 0 || sameAsEarlier(ps, mask, i) {
			continue
		}
		if n < maxNamed {
			named[n] = i
			n++
		}
		total++
	}
	entries := n
	if total > n {
		entries++
	}
	for k, i := range named[:n] {
		b = appendSep(b, k, entries)
		b = append(b, prefWord(ps[i].src)...)
		b = append(b, ' ')
		b = append(b, ps[i].name...)
	}
	if total > n {
		b = appendSep(b, n, entries)
		b = strconv.AppendInt(b, int64(total-n), 10)
		b = append(b, " more"...)
	}
	return b
}

// sameAsEarlier reports whether ps[i] reads as a preference of mask
// before it ("domain:fintech" and the message's domain fintech).
func sameAsEarlier(ps []pref, mask uint64, i int) bool {
	for j := range i {
		if mask&(1<<j) != 0 && prefWord(ps[j].src) == prefWord(ps[i].src) && ps[j].name == ps[i].name {
			return true
		}
	}
	return false
}

func prefWord(s prefSrc) string {
	switch s {
	case srcTag:
		return "tag"
	case srcDomain:
		return "domain"
	case srcTool:
		return "tool"
	case srcMCP:
		return "MCP server"
	}
	return "capability"
}

// appendRejections appends, after a space, why the first agents were
// rejected ("Research 2 is offline; Analyst is at its max_concurrency."),
// at most maxNamed of them and the count of the rest; nothing when none
// was.
func appendRejections(b []byte, m *match, requires, targets []string) []byte {
	if m.nrejected == 0 {
		return b
	}
	n := min(m.nrejected, maxNamed)
	for i, x := range m.firstRej[:n] {
		if i == 0 {
			b = append(b, ' ')
		} else {
			b = append(b, "; "...)
		}
		var a *registry.Agent
		if x.ref >= 0 {
			a = m.agents[x.ref]
			b = append(b, displayName(a, a.ID())...)
		} else {
			b = append(b, displayName(nil, targets[-1-x.ref])...)
		}
		b = append(b, ' ')
		b = appendRejection(b, x.kind, a, requires)
	}
	if more := m.nrejected - n; more > 0 {
		b = append(b, "; and "...)
		b = strconv.AppendInt(b, int64(more), 10)
		if more == 1 {
			b = append(b, " more was ruled out"...)
		} else {
			b = append(b, " more were ruled out"...)
		}
	}
	return append(b, '.')
}

// appendRejection appends the words of a hard filter's rejection of a,
// nil for an explicit recipient that is not registered.
func appendRejection(b []byte, kind rejection, a *registry.Agent, requires []string) []byte {
	switch kind {
	case rejOffline:
		if a == nil {
			return append(b, "is not registered"...)
		}
		return append(b, "is offline"...)
	case rejNoHandle:
		return append(b, "has no handler in this router"...)
	case rejPolicy:
		return append(b, "does not meet the security policy"...)
	case rejTools:
		return append(b, "needs a tool outside the allowlist"...)
	case rejNetwork:
		return append(b, "lacks the network access required"...)
	case rejCycle:
		return append(b, "is already on the task's delegation chain"...)
	case rejCapacity:
		return append(b, "is at its max_concurrency"...)
	case rejRequires:
		for _, c := range requires {
			if _, ok := a.Card().Capability(c); !ok {
				return append(append(b, "lacks "...), c...)
			}
		}
		return append(b, "lacks a required capability"...)
	}
	return append(b, "was ruled out"...)
}

// displayName is how an explanation names an agent: its card's display
// name, else its id without the "agent:" prefix. a is nil for an agent
// that is not registered.
func displayName(a *registry.Agent, id string) string {
	if a != nil {
		if d := a.Card().Display; d != nil && d.Name != "" {
			return d.Name
		}
	}
	return strings.TrimPrefix(id, protocol.PrefixAgent)
}

// appendList appends words as an English list: "a", "a and b", "a, b
// and c".
func appendList(b []byte, words []string) []byte {
	for i, w := range words {
		b = appendSep(b, i, len(words))
		b = append(b, w...)
	}
	return b
}

// appendSep appends what goes before entry i of a list of n entries.
func appendSep(b []byte, i, n int) []byte {
	switch {
	case i == 0:
		return b
	case i == n-1:
		return append(b, " and "...)
	}
	return append(b, ", "...)
}

// appendScore appends a preference score as the decision's scores show
// it, rounded to three decimals ("0.5", "0.667", "1").
func appendScore(b []byte, f float64) []byte {
	return strconv.AppendFloat(b, math.Round(f*1000)/1000, 'f', -1, 64)
}

// appendFixed2 appends f with two decimals, as the reason has it.
func appendFixed2(b []byte, f float64) []byte {
	return strconv.AppendFloat(b, f, 'f', 2, 64)
}

// appendPercent appends a success rate as a whole percentage ("95%").
func appendPercent(b []byte, f float64) []byte {
	return append(strconv.AppendInt(b, int64(math.Round(f*100)), 10), '%')
}
