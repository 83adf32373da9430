package router

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
)

// rejection is why a hard filter refused an agent.
type rejection uint8

const (
	rejNone     rejection = iota
	rejOffline            // no heartbeat within the TTL
	rejNoHandle           // registered, but no handler in this router
	rejPolicy             // security policy / sandbox / trust level
	rejTools              // tool allowlist
	rejNetwork            // network requirement
	rejCycle              // already on the task's ancestor chain
	rejCapacity           // at its max_concurrency
	rejRequires           // lacks a required capability (explicit to only)
)

// match is the outcome of one routing pass (docs/protocol.md §4.2).
type match struct {
	selected   *registry.Agent
	explicit   bool                 // "to" named the recipients
	candidates []scored             // passed every filter, best first
	rejected   map[string]string    // agent id → reason, at most maxListed
	kinds      [rejRequires + 1]int // rejections of each kind
	nrejected  int
	reason     string
	considered int
	tied       int // candidates equal on score, load and success rate
	named      int // explicit recipients named by "to"

	// For the decision's explanation (explain.go): the first rejections,
	// in the order the agents were considered. No pointers, so that
	// resetting a pooled match stays cheap.
	firstRej    [maxNamed]rejected
	explanation string

	// Kept for the next routing pass by the match pool.
	agents []*registry.Agent
	dec    protocol.RoutingDecision // decision's payload, its list and map reused
}

// newMatch returns an empty match from the router's pool: a routing pass
// per task would otherwise allocate the match, its candidate list, the
// registry's candidate list and the decision's list and map.
func (r *Router) newMatch() *match {
	if m, ok := r.matches.Get().(*match); ok {
		return m
	}
	return &match{}
}

// freeMatch returns m to the pool; nothing may use m afterwards.
func (r *Router) freeMatch(m *match) {
	clear(m.agents)
	clear(m.candidates)
	clear(m.rejected)
	clear(m.dec.Candidates)
	clear(m.dec.Scores)
	*m = match{
		agents: m.agents[:0], candidates: m.candidates[:0], rejected: m.rejected,
		dec: protocol.RoutingDecision{Candidates: m.dec.Candidates[:0], Scores: m.dec.Scores},
	}
	r.matches.Put(m)
}

// scored is a candidate with the keys it is ranked by.
type scored struct {
	a       *registry.Agent
	score   float64
	load    int
	success float64
	met     uint64 // bit i: the agent meets preference i (the first 64)
}

// maxListed bounds the candidates, scores and rejections a routing event
// lists, so that a fleet of thousands of agents does not make every
// decision event thousands of entries long; the counts are always exact.
const maxListed = 16

// routable reports whether requirements were met by some agent that is
// only busy: the task may wait for capacity.
func (m *match) onlyBusy() bool {
	return m.selected == nil && m.kinds[rejCapacity] > 0
}

// decision is the routing.decision payload of m (docs/protocol.md §4.3). It is
// m's: marshal it before m is freed.
func (m *match) decision() *protocol.RoutingDecision {
	n := min(len(m.candidates), maxListed)
	d := &m.dec
	if d.Scores == nil {
		d.Scores = make(map[string]float64, n)
	}
	d.Selected, d.Reason, d.Candidates = m.selected.ID(), m.reason, d.Candidates[:0]
	d.Explanation = m.explanation
	d.Eligible, d.Considered = len(m.candidates), m.considered
	d.Rejected = nil
	if len(m.rejected) > 0 {
		d.Rejected = m.rejected
	}
	for _, c := range m.candidates[:n] {
		d.Candidates = append(d.Candidates, c.a.ID())
		d.Scores[c.a.ID()] = math.Round(c.score*1000) / 1000 // as §4.3 shows them
	}
	return d
}

// failure returns the code and message of a routing.failure.
func (m *match) failure(requires []string) (protocol.Code, string) {
	switch {
	case m.considered == 0:
		return protocol.CodeNoMatch, "no registered agent has " + describeRequires(requires)
	case m.kinds[rejCycle] > 0 && m.kinds[rejCycle]+m.kinds[rejOffline]+m.kinds[rejNoHandle] == m.considered:
		return protocol.CodeCycle, "every agent that matches is already on the task's delegation chain"
	case m.kinds[rejCapacity] > 0:
		return protocol.CodeCapacity, "every agent that matches is at its max_concurrency"
	case m.kinds[rejPolicy]+m.kinds[rejTools] > 0 && m.kinds[rejPolicy]+m.kinds[rejTools]+m.kinds[rejOffline]+m.kinds[rejNoHandle] == m.considered:
		return protocol.CodePolicyDenied, "no agent that matches " + describeRequires(requires) + " complies with the security policy"
	}
	return protocol.CodeNoMatch, "no available agent matches " + describeRequires(requires)
}

func describeRequires(requires []string) string {
	if len(requires) == 0 {
		return "the request"
	}
	return "requires[" + strings.Join(requires, ", ") + "]"
}

// route runs the matching algorithm of docs/protocol.md §4.2 for req, whose task
// has the given ancestor agents.
func (r *Router) route(req *protocol.Message, ancestors []string) *match {
	m := r.newMatch()
	agents := m.agents[:0]
	requires := capabilityRequires(req.Requires)
	targets := r.explicitTargets(req)
	if len(targets) > 0 {
		// An explicit "to" skips scoring but not the hard filters (§4.2).
		m.explicit, m.named = true, len(targets)
		for j, id := range targets {
			a, ok := r.reg.Get(id)
			if !ok {
				m.considered++
				m.reject(id, int32(-1-j), rejOffline, "not registered")
				continue
			}
			agents = append(agents, a)
		}
	} else {
		agents = r.reg.AppendCandidates(agents, requires)
	}
	m.agents = agents
	m.considered += len(agents)
	now := r.now()
	m.candidates = slices.Grow(m.candidates[:0], len(agents))
	handlers := r.handlerMap()
	for i, a := range agents {
		if why, kind := r.hardFilter(req, a, handlers, requires, ancestors, m.explicit, now); kind != rejNone {
			m.reject(a.ID(), int32(i), kind, why)
			continue
		}
		m.candidates = append(m.candidates, scored{a: a})
	}
	if len(m.candidates) == 0 {
		return m
	}
	var pbuf [8]pref
	ps, total := r.prefsOf(req, pbuf[:0])
	for i := range m.candidates {
		c := &m.candidates[i]
		c.score, c.met = score(ps, total, c.a)
		if len(m.candidates) > 1 {
			c.load, c.success = c.a.InFlight(), c.a.SuccessRate()
		}
	}
	if len(m.candidates) > 1 {
		r.rank(m)
	}
	m.selected = m.candidates[0].a
	m.reason, m.explanation = r.explain(m, requires, targets, ps, total > 0)
	return m
}

// reject records that a hard filter refused the agent: ref is its index
// in m.agents, or -1-j for targets[j], an explicit recipient that is not
// registered.
func (m *match) reject(id string, ref int32, kind rejection, why string) {
	if m.nrejected < len(m.firstRej) {
		m.firstRej[m.nrejected] = rejected{ref: ref, kind: kind}
	}
	m.kinds[kind]++
	m.nrejected++
	if len(m.rejected) >= maxListed {
		return
	}
	if m.rejected == nil {
		m.rejected = map[string]string{}
	}
	m.rejected[id] = why
}

// explicitTargets returns the recipients of req that are not the router
// itself; none means "route by capability".
func (r *Router) explicitTargets(req *protocol.Message) []string {
	var out []string
	for _, p := range req.To {
		if p.AgentID != r.opts.AgentID && strings.HasPrefix(p.AgentID, protocol.PrefixAgent) {
			out = append(out, p.AgentID)
		}
	}
	return out
}

// capabilityRequires drops the "network:" entries, which are not
// capability ids but a hard filter (see hardFilter).
func capabilityRequires(req []string) []string {
	for i, c := range req {
		if strings.HasPrefix(c, "network:") {
			out := append([]string(nil), req[:i]...)
			for _, c := range req[i+1:] {
				if !strings.HasPrefix(c, "network:") {
					out = append(out, c)
				}
			}
			return out
		}
	}
	return req
}

// networkRank orders the card network values from most to least restricted.
func networkRank(v string) int {
	switch v {
	case "", "none":
		return 0
	case "egress-restricted", "restricted":
		return 1
	case "open", "egress", "full":
		return 2
	}
	return -1
}

// hardFilter applies the must-pass rules of §4.2 step 1 (and, for an
// explicit recipient, step 2), cheapest first.
// handlers is the router's handler map; in a team, the team's handlers
// count too (team.go).
func (r *Router) hardFilter(req *protocol.Message, a *registry.Agent, handlers map[string]Handler, requires, ancestors []string, explicit bool, now time.Time) (string, rejection) {
	if !a.Local() && now.Sub(a.LastSeen()) > r.reg.HeartbeatTTL() {
		return "offline: no heartbeat within " + r.reg.HeartbeatTTL().String(), rejOffline
	}
	if _, ok := handlers[a.ID()]; !ok && r.teamHandler(a.ID()) == nil {
		return "no handler registered with this router", rejNoHandle
	}
	card := a.Card()
	if explicit {
		for _, c := range requires {
			if _, ok := card.Capability(c); !ok {
				return "lacks required capability " + c, rejRequires
			}
		}
	}
	if p := req.Security; p != nil && p.Policy != nil {
		// The capabilities the task will use: the required ones, or all.
		used := card.Capabilities
		if len(requires) > 0 {
			used = make([]protocol.Capability, 0, len(requires))
			for _, c := range requires {
				if cp, ok := card.Capability(c); ok {
					used = append(used, cp)
				}
			}
		}
		if p.Policy.Sandbox {
			if card.Security == nil || !card.Security.Sandbox {
				return "policy requires a sandboxed agent", rejPolicy
			}
			for _, cp := range used {
				if cp.TrustLevel == protocol.TrustProd {
					return "policy requires sandbox trust, " + cp.ID + " has trust_level prod", rejPolicy
				}
			}
		}
		if allow := p.Policy.ToolAllowlist; allow != nil {
			for _, cp := range used {
				for _, l := range [][]string{cp.Tools, cp.Servers} {
					for _, t := range l {
						if !slices.Contains(allow, t) {
							return cp.ID + " needs " + t + ", outside the tool allowlist", rejTools
						}
					}
				}
			}
		}
	}
	for _, c := range req.Requires {
		if want, ok := strings.CutPrefix(c, "network:"); ok {
			have := ""
			if card.Security != nil {
				have = card.Security.Network
			}
			if networkRank(have) < networkRank(want) || networkRank(want) < 0 {
				return "requires network " + want + ", agent has " + cmpOr(have, "none"), rejNetwork
			}
		}
	}
	if slices.Contains(ancestors, a.ID()) {
		return "already on the task's delegation chain (cycle)", rejCycle
	}
	if limit := a.MaxConcurrency(); limit > 0 && a.InFlight() >= limit {
		return "at max_concurrency " + strconv.Itoa(limit), rejCapacity
	}
	return "", rejNone
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// pref is one parsed preference of a request: plain data, so that
// parsing a request's preferences allocates nothing for the few a request
// has.
type pref struct {
	kind   prefKind
	src    prefSrc // how the request said it, for the explanation
	name   string  // the tag, the tool name or the capability id
	weight float64
}

// prefSrc is the form a preference took in the request.
type prefSrc uint8

const (
	srcTag        prefSrc = iota // "tag:x"
	srcDomain                    // "domain:x", or the message's domain
	srcTool                      // "tool:x"
	srcMCP                       // "mcp:x"
	srcCapability                // any other entry
)

type prefKind uint8

const (
	prefTag        prefKind = iota // "tag:x", "domain:x" and the request's domain
	prefTool                       // "tool:x", "mcp:x"
	prefCapability                 // any other entry: a capability id
)

// match reports whether card meets the preference.
func (p *pref) match(card *protocol.AgentCard) bool {
	switch p.kind {
	case prefTag:
		return hasTag(card, p.name)
	case prefTool:
		return hasTool(card, p.name)
	default:
		_, ok := card.Capability(p.name)
		return ok
	}
}

// prefsOf parses req's preferences once per routing pass (§4.2 step 3):
// each prefers[] entry with the weight of its kind, and the domain. buf is
// where they go when they fit.
func (r *Router) prefsOf(req *protocol.Message, buf []pref) (ps []pref, total float64) {
	w := r.opts.Weights
	ps = buf[:0]
	for _, p := range req.Prefers {
		kind, name, _ := strings.Cut(p, ":")
		switch kind {
		case "tag":
			ps = append(ps, pref{kind: prefTag, src: srcTag, name: name, weight: w.Tags})
		case "domain":
			ps = append(ps, pref{kind: prefTag, src: srcDomain, name: name, weight: w.Tags})
		case "tool":
			ps = append(ps, pref{kind: prefTool, src: srcTool, name: name, weight: w.Tools})
		case "mcp":
			ps = append(ps, pref{kind: prefTool, src: srcMCP, name: name, weight: w.Tools})
		default:
			ps = append(ps, pref{kind: prefCapability, src: srcCapability, name: p, weight: w.Capabilities})
		}
	}
	if d := req.Domain; d != "" {
		ps = append(ps, pref{kind: prefTag, src: srcDomain, name: d, weight: w.Domain})
	}
	for _, p := range ps {
		total += p.weight
	}
	return ps, total
}

// score is the weighted share of preferences the agent meets (§4.2 step
// 3), and which of the first 64 it meets (bit i for ps[i]).
func score(ps []pref, total float64, a *registry.Agent) (float64, uint64) {
	if total == 0 {
		return 1, 0
	}
	var got float64
	var met uint64
	card := a.Card()
	for i := range ps {
		if p := &ps[i]; p.weight != 0 && p.match(card) {
			got += p.weight
			if i < 64 {
				met |= 1 << i
			}
		}
	}
	return got / total, met
}

func hasTag(card *protocol.AgentCard, tag string) bool {
	for _, c := range card.Capabilities {
		for _, t := range c.Tags {
			if len(t) == len(tag) && strings.EqualFold(t, tag) {
				return true
			}
		}
	}
	return false
}

func hasTool(card *protocol.AgentCard, name string) bool {
	for _, c := range card.Capabilities {
		if prefixed(c.ID, "tool:", name) {
			return true
		}
		for _, t := range c.Tools {
			if t == name || prefixed(t, "mcp:", name) {
				return true
			}
		}
		for _, t := range c.Servers {
			if t == name || prefixed(t, "mcp:", name) {
				return true
			}
		}
	}
	return false
}

// prefixed reports whether s is prefix+name.
func prefixed(s, prefix, name string) bool {
	return len(s) == len(prefix)+len(name) && strings.HasPrefix(s, prefix) && s[len(prefix):] == name
}

// rank orders m.candidates best first: score, then the tie-breakers of
// §4.2 step 4 — least loaded, best recent success rate, round robin.
func (r *Router) rank(m *match) {
	cs := m.candidates
	slices.SortFunc(cs, func(x, y scored) int {
		switch {
		case x.score != y.score:
			return cmpDesc(x.score, y.score)
		case x.load != y.load:
			return x.load - y.load
		case x.success != y.success:
			return cmpDesc(x.success, y.success)
		}
		return strings.Compare(x.a.ID(), y.a.ID())
	})
	// Round robin among the agents still tied on all three.
	tied := 1
	for tied < len(cs) && cs[tied].score == cs[0].score && cs[tied].load == cs[0].load && cs[tied].success == cs[0].success {
		tied++
	}
	if tied > 1 {
		k := int(r.rr.Add(1) % uint64(tied))
		cs[0], cs[k] = cs[k], cs[0]
	}
	m.tied = tied
}

func cmpDesc(a, b float64) int {
	if a > b {
		return -1
	}
	return 1
}
