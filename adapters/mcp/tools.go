package mcp

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"regexp"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool is a tool of a configured server, as listed by the server and
// named for an LLM.
type Tool struct {
	// Server is the server's configured name; the server is addressed as
	// "mcp:<Server>".
	Server string
	// Name is the tool's name on the server (what tools/call sends).
	Name string
	// LLMName is the flattened name handed to an LLM, "mcp_<server>_<tool>"
	// (docs/protocol.md §13.3.3): it matches ^[A-Za-z0-9_-]{1,64}$ and is unique
	// across all servers of a Client. Characters outside that set become
	// '_'; a name that would be too long, or that collides with another
	// tool of the same server after that, is cut and gets a short hash of
	// the tool name.
	LLMName     string
	Title       string
	Description string
	// InputSchema and OutputSchema are the tool's JSON Schemas as the
	// server sent them; OutputSchema is nil when the tool has none.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	// Annotations are the server's hints (untrusted unless the server is).
	Annotations *sdk.ToolAnnotations
}

// ServerID returns "mcp:<Server>", the id AgentCards and allowlists use.
func (t *Tool) ServerID() string { return ServerID(t.Server) }

// ServerID returns the id of a server, "mcp:<name>" (docs/protocol.md Appendix B).
func ServerID(name string) string { return "mcp:" + name }

// LLMNameRE is the pattern every flattened tool name matches.
var LLMNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

const maxLLMName = 64

// toolSet is the cached tool list of one server.
type toolSet struct {
	list   []Tool
	byName map[string]*toolEntry
	byLLM  map[string]string // LLM name → tool name
}

type toolEntry struct {
	tool      *Tool
	once      sync.Once
	schema    *jsonschema.Resolved
	schemaErr error
}

// outputSchema returns the tool's resolved output schema, nil when it has
// none.
func (e *toolEntry) outputSchema() (*jsonschema.Resolved, error) {
	e.once.Do(func() {
		if len(e.tool.OutputSchema) == 0 {
			return
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(e.tool.OutputSchema, &s); err != nil {
			e.schemaErr = fmt.Errorf("outputSchema of %s: %w", e.tool.Name, err)
			return
		}
		e.schema, e.schemaErr = s.Resolve(nil)
		if e.schemaErr != nil {
			e.schemaErr = fmt.Errorf("outputSchema of %s: %w", e.tool.Name, e.schemaErr)
		}
	})
	return e.schema, e.schemaErr
}

// newToolSet names a server's tools.
func newToolSet(server string, tools []*sdk.Tool) *toolSet {
	ts := &toolSet{byName: make(map[string]*toolEntry, len(tools)), byLLM: make(map[string]string, len(tools))}
	ts.list = make([]Tool, 0, len(tools))
	for _, t := range tools {
		if t == nil || t.Name == "" {
			continue
		}
		if _, dup := ts.byName[t.Name]; dup {
			continue // names are unique per server; keep the first
		}
		tool := Tool{Server: server, Name: t.Name, Title: t.Title, Description: t.Description, Annotations: t.Annotations}
		tool.InputSchema = rawJSON(t.InputSchema)
		tool.OutputSchema = rawJSON(t.OutputSchema)
		tool.LLMName = llmName(server, t.Name, ts.byLLM)
		ts.byLLM[tool.LLMName] = t.Name
		ts.list = append(ts.list, tool)
	}
	for i := range ts.list {
		ts.byName[ts.list[i].Name] = &toolEntry{tool: &ts.list[i]}
	}
	return ts
}

func (ts *toolSet) names() []string {
	out := make([]string, len(ts.list))
	for i := range ts.list {
		out[i] = ts.list[i].Name
	}
	return out
}

func rawJSON(v any) json.RawMessage {
	switch x := v.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return append(json.RawMessage(nil), x...)
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return nil
	}
	return b
}

// llmName flattens (server, tool) into a name unique among taken.
func llmName(server, tool string, taken map[string]string) string {
	prefix := "mcp_" + server + "_"
	b := []byte(prefix)
	for i := 0; i < len(tool); i++ {
		c := tool[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b = append(b, c)
		} else {
			b = append(b, '_')
		}
	}
	name := string(b)
	if _, clash := taken[name]; !clash && len(name) <= maxLLMName && len(tool) > 0 {
		return name
	}
	for salt := uint32(0); ; salt++ {
		h := fnv.New32a()
		h.Write([]byte(tool))
		if salt > 0 {
			fmt.Fprintf(h, "#%d", salt)
		}
		suffix := fmt.Sprintf("_%08x", h.Sum32())
		keep := min(len(b), maxLLMName-len(suffix))
		n := string(b[:keep]) + suffix
		if _, clash := taken[n]; !clash {
			return n
		}
	}
}
