package mcp

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/clutchprotocol/clutch/egress"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of a zero ClientOptions and ServerConfig.
const (
	// DefaultTimeout is the deadline of a tool call when neither the call,
	// nor its server, nor the ClientOptions set one.
	DefaultTimeout = 30 * time.Second
	// DefaultConnectTimeout bounds starting or reaching a server and the
	// protocol handshake.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultMaxResultBytes is the largest tool result accepted; a larger
	// one is refused with TOO_LARGE and the connection stays up.
	DefaultMaxResultBytes = 4 << 20
	// DefaultInlineResultBytes is the largest tool.result payload stored
	// inline; a larger result goes to the artifact store and the event
	// holds its ref.
	DefaultInlineResultBytes = 256 << 10
	// DefaultTerminateDuration is how long Close waits for a stdio server
	// to exit after its stdin is closed, and again after SIGTERM, before
	// SIGKILL.
	DefaultTerminateDuration = 2 * time.Second
	// DefaultMaxBackoff caps the wait between reconnect attempts after
	// consecutive connection failures.
	DefaultMaxBackoff = 5 * time.Second
)

// ServerConfig configures one MCP server. Set exactly one of Command
// (stdio), URL (Streamable HTTP) or Transport.
type ServerConfig struct {
	// Name names the server: it is addressed as "mcp:<Name>" in AgentCards
	// and tool allowlists, and its tools reach an LLM as
	// "mcp_<Name>_<tool>". 1–32 letters, digits and '-' (no '_', so that
	// flattened names cannot collide between servers).
	Name string

	// Command starts a stdio server: a fresh process for every
	// connection, so a crashed server is restarted on the next call.
	Command string
	// Args are the command's arguments.
	Args []string
	// Env holds environment variables for the command, on top of the
	// inherited ones (see InheritEnv).
	Env map[string]string
	// InheritEnv passes the host's whole environment to the command. By
	// default only HOME, LOGNAME, PATH, SHELL, TERM, TMPDIR, USER, LANG and
	// LC_ALL are passed, so that secrets in the host's environment do not
	// reach a tool server by accident.
	InheritEnv bool
	// Dir is the command's working directory; the host's when "".
	Dir string

	// URL is the endpoint of a Streamable HTTP server.
	URL string
	// Headers are sent with every HTTP request (e.g. Authorization).
	Headers map[string]string
	// HTTPClient sends the HTTP requests; its Transport is wrapped to add
	// Headers, read Retry-After and enforce MaxResultBytes. Its Transport,
	// when set, must be an *http.Transport: the client uses a clone whose
	// DialContext is the egress policy's and whose Proxy is nil (see
	// ClientOptions.Egress). ClientOptions.Egress.Transport() when nil.
	HTTPClient *http.Client

	// Transport, when set, makes the connection instead: called once per
	// (re)connection. Tests and examples use it with
	// sdk.NewInMemoryTransports.
	Transport func(ctx context.Context) (sdk.Transport, error)

	// Timeout is the default deadline of this server's calls;
	// ClientOptions.Timeout when 0.
	Timeout time.Duration
	// MaxResultBytes overrides ClientOptions.MaxResultBytes for this
	// server.
	MaxResultBytes int
}

// Kind returns "stdio", "http" or "custom".
func (c *ServerConfig) Kind() string {
	switch {
	case c.Command != "":
		return "stdio"
	case c.URL != "":
		return "http"
	}
	return "custom"
}

// ClientOptions configures a Client. Nil means defaults; zero fields take
// defaults.
type ClientOptions struct {
	// Logger receives diagnostics and each line a stdio server writes to
	// its stderr (level INFO, attributes mcp_server and stderr);
	// slog.Default() when nil.
	Logger *slog.Logger
	// Timeout is the default deadline of a call; DefaultTimeout when 0.
	Timeout time.Duration
	// ConnectTimeout bounds a (re)connection; DefaultConnectTimeout when 0.
	ConnectTimeout time.Duration
	// MaxResultBytes is the largest result accepted (the JSON-RPC frame on
	// stdio and HTTP, the encoded result on other transports);
	// DefaultMaxResultBytes when 0.
	MaxResultBytes int
	// InlineResultBytes is the largest tool.result payload stored inline
	// in the event; a larger one is stored as an artifact (docs/protocol.md §8.2)
	// and the event holds its ref. DefaultInlineResultBytes when 0.
	InlineResultBytes int
	// TerminateDuration: see DefaultTerminateDuration.
	TerminateDuration time.Duration
	// MaxBackoff caps the wait between reconnect attempts after
	// consecutive connection failures; DefaultMaxBackoff when 0.
	MaxBackoff time.Duration
	// ClientInfo is the implementation announced to servers;
	// {Name: "clutch", Version: ClientVersion} when nil.
	ClientInfo *sdk.Implementation
	// ProtocolVersion asks for an MCP revision; the SDK's latest
	// (2026-07-28, falling back to 2025-11-25 for older servers) when "".
	ProtocolVersion string
	// Egress is the policy every connection to a Streamable HTTP server is
	// dialled through (package egress, docs/protocol.md §6): the server's
	// host is checked on the address it resolves to, at every dial and
	// redirect. egress.Default() when nil: public addresses only, so a
	// server on loopback or a private network needs an IP or CIDR rule
	// ("127.0.0.1", "10.0.0.0/8"). Each call is also held to the calling
	// agent's card: see [Client.Call]. stdio servers are processes, not
	// connections, and custom Transports are the caller's: neither is
	// governed by the policy.
	Egress *egress.Policy
	// OnToolsChanged, when set, is called (on its own goroutine) after a
	// server announced that its tool list changed; the cached list is
	// already dropped, the next Tools or LLMTools call loads it again.
	OnToolsChanged func(server string)
}

// ClientVersion is the version the Client announces in clientInfo.
const ClientVersion = "0.1.0"

// CallOptions adjusts one call. Nil means defaults.
type CallOptions struct {
	// Timeout is the call's deadline; the server's, then the client's
	// default when 0.
	Timeout time.Duration
	// ProgressToken overrides the progress token sent with the call (the
	// tool.call event id by default).
	ProgressToken string
}

var serverNameRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,32}$`)

func (o *ClientOptions) setDefaults() error {
	if o.Timeout < 0 || o.ConnectTimeout < 0 || o.MaxResultBytes < 0 || o.InlineResultBytes < 0 || o.TerminateDuration < 0 || o.MaxBackoff < 0 {
		return wrap(ErrInvalidConfig, "durations and sizes must not be negative")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.MaxResultBytes == 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	if o.InlineResultBytes == 0 {
		o.InlineResultBytes = DefaultInlineResultBytes
	}
	if o.TerminateDuration == 0 {
		o.TerminateDuration = DefaultTerminateDuration
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.Egress == nil {
		o.Egress = egress.Default()
	}
	if o.ClientInfo == nil {
		o.ClientInfo = &sdk.Implementation{Name: "clutch", Version: ClientVersion}
	}
	return nil
}

// validate checks one server's configuration.
func (c *ServerConfig) validate() error {
	if !serverNameRE.MatchString(c.Name) {
		return wrap(ErrInvalidConfig, "server name "+strconv.Quote(c.Name)+" must be 1–32 letters, digits or '-'")
	}
	n := 0
	if c.Command != "" {
		n++
	}
	if c.URL != "" {
		n++
	}
	if c.Transport != nil {
		n++
	}
	if n != 1 {
		return wrap(ErrInvalidConfig, "server "+c.Name+": set exactly one of Command, URL and Transport")
	}
	if c.Timeout < 0 || c.MaxResultBytes < 0 {
		return wrap(ErrInvalidConfig, "server "+c.Name+": Timeout and MaxResultBytes must not be negative")
	}
	if c.Command == "" && (len(c.Args) > 0 || len(c.Env) > 0 || c.Dir != "" || c.InheritEnv) {
		return wrap(ErrInvalidConfig, "server "+c.Name+": Args, Env, Dir and InheritEnv need Command")
	}
	if c.URL == "" && (len(c.Headers) > 0 || c.HTTPClient != nil) {
		return wrap(ErrInvalidConfig, "server "+c.Name+": Headers and HTTPClient need URL")
	}
	if c.HTTPClient != nil && c.HTTPClient.Transport != nil {
		if _, ok := c.HTTPClient.Transport.(*http.Transport); !ok {
			return wrap(ErrInvalidConfig, "server "+c.Name+": HTTPClient.Transport must be an *http.Transport, so that it dials through the egress policy")
		}
	}
	return nil
}
