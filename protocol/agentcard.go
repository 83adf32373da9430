package protocol

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode"
)

// AgentCard advertises an agent and its capabilities (docs/protocol.md §1.4).
type AgentCard struct {
	// V is the protocol version, [Version]. It is required on the wire;
	// a card registered in Go (registry.Register, router.Register) may
	// leave it empty, which means Version.
	V            string              `json:"v"`
	AgentID      string              `json:"agent_id"`
	Display      *Display            `json:"display,omitzero"`
	Endpoints    map[string]Endpoint `json:"endpoints,omitzero"`
	Capabilities []Capability        `json:"capabilities"`
	Limits       *Limits             `json:"limits,omitzero"`
	Security     *CardSecurity       `json:"security,omitzero"`
	// Extensions holds top-level members docs/protocol.md §1.4 does not
	// define, verbatim.
	Extensions map[string]json.RawMessage `json:",embed"`
}

// Display is how an agent is shown to people.
type Display struct {
	Name string `json:"name,omitzero"`
	Desc string `json:"desc,omitzero"`
}

// Endpoint is where an agent is reached over one protocol ("a2a", "clutch", ...).
type Endpoint struct {
	URL string `json:"url"`
}

// Capability is one thing an agent can do (§1.5).
type Capability struct {
	ID         string   `json:"id"`                   // "skill:research", "tool:mcp"
	Version    string   `json:"version,omitzero"`     // semantic version or range
	Tags       []string `json:"tags,omitzero"`        // domain tags for matching
	Tools      []string `json:"tools,omitzero"`       // MCP servers it needs ("mcp:browser")
	TrustLevel string   `json:"trust_level,omitzero"` // "sandbox" or "prod"
	CostHint   string   `json:"cost_hint,omitzero"`   // "low", "medium", "high"
	Servers    []string `json:"servers,omitzero"`     // for tool:mcp, the servers offered
}

// Trust levels and cost hints of §1.5.
const (
	TrustSandbox = "sandbox"
	TrustProd    = "prod"
	CostLow      = "low"
	CostMedium   = "medium"
	CostHigh     = "high"
)

// Limits bound what the router sends an agent (§1.4). Zero means no limit.
type Limits struct {
	MaxConcurrency int `json:"max_concurrency,omitzero"`
	MaxRuntimeSec  int `json:"max_runtime_sec,omitzero"`
}

// CardSecurity describes how an agent runs and how it signs (§1.4, §6).
type CardSecurity struct {
	Sandbox bool   `json:"sandbox,omitzero"`
	Network string `json:"network,omitzero"` // e.g. "egress-restricted", "none", "open"
	// Keys are the public keys the agent signs its messages with, by key
	// id (§6.1 "Keys"). A card update that drops a kid retires it.
	Keys []CardKey `json:"keys,omitzero"`
}

// CardKey is one public signing key of an agent (docs/protocol.md §1.4,
// §6.1): {"kid": "key_ken_01", "alg": "ed25519", "public_key": "<base64url>"}.
type CardKey struct {
	Kid       string `json:"kid"`
	Alg       string `json:"alg"`        // "ed25519" (SchemeEd25519)
	PublicKey string `json:"public_key"` // the 32 key bytes, base64url without padding
}

// NewCardKey returns the card entry of an Ed25519 public key.
func NewCardKey(kid string, pub ed25519.PublicKey) CardKey {
	return CardKey{Kid: kid, Alg: SchemeEd25519, PublicKey: base64.RawURLEncoding.EncodeToString(pub)}
}

// Ed25519 returns the key, or an INVALID_FIELD error when the entry is
// not a valid Ed25519 key: a kid that is empty, longer than MaxIDLength or
// holds control characters, an alg other than "ed25519", or a public_key
// that is not 32 bytes of base64url without padding.
func (k CardKey) Ed25519() (ed25519.PublicKey, error) {
	if k.Kid == "" || len(k.Kid) > MaxIDLength || strings.ContainsFunc(k.Kid, unicode.IsControl) {
		return nil, invalid(CodeInvalidField, "/kid", "kid "+quote(k.Kid)+" must be 1 to 256 bytes without control characters")
	}
	if k.Alg != SchemeEd25519 {
		return nil, invalid(CodeInvalidField, "/alg", "alg "+quote(k.Alg)+" is not "+quote(SchemeEd25519))
	}
	pub, err := base64.RawURLEncoding.Strict().DecodeString(k.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, invalid(CodeInvalidField, "/public_key", "public_key is not 32 bytes of base64url without padding")
	}
	return ed25519.PublicKey(pub), nil
}

// DecodeAgentCard decodes an AgentCard strictly with the default limits:
// duplicate keys, invalid UTF-8, wrong types and unknown members inside the
// card's own objects are errors; unknown top-level members are kept in
// Extensions. The card is then checked with [AgentCard.Validate].
func DecodeAgentCard(data []byte) (*AgentCard, error) { return Decoder{}.DecodeAgentCard(data) }

// DecodeAgentCard is [DecodeAgentCard] with d's limits.
func (d Decoder) DecodeAgentCard(data []byte) (*AgentCard, error) {
	maxBytes, maxDepth := d.limits()
	if len(data) > maxBytes {
		return nil, newError(CodeTooLarge, "", maxBytes, "card is %d bytes, limit %d", len(data), maxBytes)
	}
	// The strict scanner runs first so that depth, UTF-8 and duplicate-key
	// errors carry the same codes as for messages.
	sc := scanner{data: data, s: string(data), maxDepth: maxDepth}
	if sc.peek() != '{' {
		if sc.pos >= len(data) {
			return nil, sc.err(CodeInvalidJSON, "empty input")
		}
		return nil, sc.wrongType("object")
	}
	if _, _, err := sc.skip(0); err != nil {
		return nil, err
	}
	if sc.peek() != 0 || sc.pos < len(data) {
		return nil, sc.err(CodeInvalidJSON, "data after the JSON object")
	}
	var c AgentCard
	if err := unmarshalStrict(data, (*cardFields)(&c)); err != nil {
		return nil, wrapUnmarshal(err, "")
	}
	if len(c.Extensions) == 0 {
		c.Extensions = nil
	}
	for _, f := range [...]struct {
		name    string
		present bool
	}{{"v", c.V != ""}, {"agent_id", c.AgentID != ""}, {"capabilities", c.Capabilities != nil}} {
		if !f.present && !hasTopKey(data, f.name) {
			return nil, invalid(CodeMissingField, "/"+f.name, "required field "+quote(f.name)+" is missing")
		}
	}
	if c.V != Version {
		return nil, invalid(CodeUnsupportedVersion, "/v", "version "+quote(c.V)+", this package speaks "+quote(Version))
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// hasTopKey reports whether a checked JSON object has the top-level key k.
func hasTopKey(data []byte, k string) bool {
	sc := scanner{data: data, s: string(data), maxDepth: DefaultMaxDepth}
	found := false
	_ = sc.object(func(key string) *Error {
		if key == k {
			found = true
		}
		_, _, err := sc.skip(0)
		return err
	})
	return found
}

// EncodeAgentCard validates c and encodes it.
func EncodeAgentCard(c *AgentCard) ([]byte, error) {
	if c == nil {
		return nil, invalid(CodeMissingField, "", "nil card")
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	b, err := marshalValue((*cardFields)(c))
	if err != nil {
		return nil, &Error{Code: CodeWrongType, Offset: -1, Detail: "card cannot be encoded", Err: err}
	}
	return b, nil
}

// cardFields is AgentCard without its methods, for the JSON v2 codec.
type cardFields AgentCard

// MarshalJSON makes encoding/json use [EncodeAgentCard].
func (c *AgentCard) MarshalJSON() ([]byte, error) { return EncodeAgentCard(c) }

// UnmarshalJSON makes encoding/json use [DecodeAgentCard].
func (c *AgentCard) UnmarshalJSON(b []byte) error {
	d, err := DecodeAgentCard(b)
	if err != nil {
		return err
	}
	*c = *d
	return nil
}

// Validate checks the card's semantic rules: v is [Version], agent_id starts
// with "agent:", each capability has an id of the form <kind>:<name>, tools
// and servers are <kind>:<name>, trust_level is sandbox or prod, cost_hint
// is low, medium or high, limits are not negative, and each entry of
// security.keys is a valid Ed25519 key ([CardKey.Ed25519]) with a kid of
// its own.
func (c *AgentCard) Validate() error {
	if c.V != Version {
		return invalid(CodeUnsupportedVersion, "/v", "version "+quote(c.V)+", this package speaks "+quote(Version))
	}
	if err := checkAgent("/agent_id", c.AgentID, false); err != nil {
		return err
	}
	if c.Capabilities == nil {
		return invalid(CodeMissingField, "/capabilities", "capabilities is required (may be empty)")
	}
	for i, cp := range c.Capabilities {
		p := "/capabilities/" + strconv.Itoa(i)
		if !validCapabilityRef(cp.ID) {
			return invalid(CodeInvalidField, p+"/id", "capability id "+quote(cp.ID)+" is not of the form <kind>:<name>")
		}
		for j, t := range cp.Tools {
			if !validCapabilityRef(t) {
				return invalid(CodeInvalidField, p+"/tools/"+strconv.Itoa(j), "tool "+quote(t)+" is not of the form <kind>:<name>")
			}
		}
		for j, t := range cp.Servers {
			if !validCapabilityRef(t) {
				return invalid(CodeInvalidField, p+"/servers/"+strconv.Itoa(j), "server "+quote(t)+" is not of the form <kind>:<name>")
			}
		}
		switch cp.TrustLevel {
		case "", TrustSandbox, TrustProd:
		default:
			return invalid(CodeInvalidField, p+"/trust_level", "trust_level "+quote(cp.TrustLevel)+" is not sandbox or prod")
		}
		switch cp.CostHint {
		case "", CostLow, CostMedium, CostHigh:
		default:
			return invalid(CodeInvalidField, p+"/cost_hint", "cost_hint "+quote(cp.CostHint)+" is not low, medium or high")
		}
	}
	if l := c.Limits; l != nil && (l.MaxConcurrency < 0 || l.MaxRuntimeSec < 0) {
		return invalid(CodeInvalidField, "/limits", "limits must not be negative")
	}
	if c.Security != nil {
		for i, k := range c.Security.Keys {
			p := "/security/keys/" + strconv.Itoa(i)
			if _, err := k.Ed25519(); err != nil {
				var pe *Error
				if errors.As(err, &pe) {
					pe.Path = p + pe.Path
				}
				return err
			}
			for _, o := range c.Security.Keys[:i] {
				if o.Kid == k.Kid {
					return invalid(CodeInvalidField, p+"/kid", "kid "+quote(k.Kid)+" is listed twice")
				}
			}
		}
	}
	for k := range c.Extensions {
		switch k {
		case "v", "agent_id", "display", "endpoints", "capabilities", "limits", "security":
			return invalid(CodeInvalidField, "/"+escapePointer(k), "an extension may not use the name of a defined field")
		}
	}
	return nil
}

// Capability returns the card's capability with the given id.
func (c *AgentCard) Capability(id string) (Capability, bool) {
	for _, cp := range c.Capabilities {
		if cp.ID == id {
			return cp, true
		}
	}
	return Capability{}, false
}

// Tools returns every tool server the card's capabilities name (tools and
// servers), without duplicates, in order of appearance.
func (c *AgentCard) Tools() []string {
	var out []string
	seen := map[string]bool{}
	for _, cp := range c.Capabilities {
		for _, l := range [][]string{cp.Tools, cp.Servers} {
			for _, t := range l {
				if !seen[t] {
					seen[t] = true
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// Tags returns every tag of the card's capabilities, lower-cased, without
// duplicates.
func (c *AgentCard) Tags() []string {
	var out []string
	seen := map[string]bool{}
	for _, cp := range c.Capabilities {
		for _, t := range cp.Tags {
			t = strings.ToLower(t)
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}
