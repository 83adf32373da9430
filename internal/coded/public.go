package coded

import (
	"errors"
	"strings"
)

// Public returns the message of err for a person at the other end of a
// wire (an HTTP answer, an MCP tool error): the details of the coded
// errors in its chain without the Go package prefixes of their sentinels,
// each said once. A [Wrapped] with a detail says its detail (then its
// cause's public message); one without says its cause's, or else its
// sentinel's text ("gateway: not found" → "not found"). Any other error
// says its text with the module's package prefixes taken out
// ("router: closed" → "closed").
func Public(err error) string {
	if err == nil {
		return ""
	}
	var wr *Wrapped
	if errors.As(err, &wr) {
		var parts []string
		if wr.Detail != "" {
			parts = append(parts, wr.Detail)
		}
		if wr.Cause != nil {
			if s := Public(wr.Cause); s != "" {
				parts = append(parts, s)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, ": ")
		}
		return WithoutPrefixes(wr.Sentinel.Error())
	}
	return WithoutPrefixes(err.Error())
}

// WithoutPrefixes removes from msg the Go package prefixes ("schema: ",
// "router: ") the module's errors start with, at its start and after each
// ": ", so a chain of wrapped errors reads as one sentence.
func WithoutPrefixes(msg string) string {
	var b strings.Builder
	rest := msg
	for {
		for {
			word, after, ok := strings.Cut(rest, ": ")
			if !ok || !packages[word] {
				break
			}
			rest = after
		}
		part, after, ok := strings.Cut(rest, ": ")
		b.WriteString(part)
		if !ok {
			return b.String()
		}
		b.WriteString(": ")
		rest = after
	}
}

// packages are the names of the module's packages whose errors start with
// "<name>: " (TestPackagesListed keeps the list whole).
var packages = map[string]bool{
	"a2a": true, "adapters": true, "adaptertest": true, "agui": true, "auth": true, "autogen": true,
	"boltstore": true, "client": true, "clowl": true, "coded": true, "crewai": true, "demo": true,
	"egress": true, "eino": true, "eventio": true, "gateway": true, "genkit": true, "httpjson": true, "keyfile": true,
	"langchaingo": true, "langgraph": true, "mcp": true, "memstore": true, "multiagent": true, "pgstore": true, "retention": true,
	"protocol": true, "registry": true, "router": true, "routertest": true, "rules": true,
	"rulesapi": true, "rulesmcp": true, "schema": true, "store": true, "storetest": true,
	"team": true, "telemetry": true, "webhook": true,
}
