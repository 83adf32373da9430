package mcp

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Client reaches many MCP servers by name (docs/protocol.md §13.3.3): it connects
// lazily, caches each server's tool list, names tools for LLMs, and makes
// tool calls on behalf of router tasks (see [Client.Call]). It is safe for
// concurrent use. Close it to stop every server process it started.
type Client struct {
	opts    ClientOptions
	servers map[string]*server
	order   []*server

	pmu     sync.Mutex
	pending map[string]*pendingCall // progress token → call

	wg     sync.WaitGroup // watchers and background closes
	mu     sync.Mutex
	closed bool
}

// NewClient returns a Client for the given servers, without connecting to
// any of them. The servers are a slice, not a map, so that LLMTools lists
// them in a stable order; their names must be unique. opts may be nil.
func NewClient(servers []ServerConfig, opts *ClientOptions) (*Client, error) {
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	c := &Client{opts: o, servers: make(map[string]*server, len(servers)), pending: map[string]*pendingCall{}}
	for i := range servers {
		cfg := servers[i]
		if err := cfg.validate(); err != nil {
			return nil, err
		}
		if _, dup := c.servers[cfg.Name]; dup {
			return nil, wrap(ErrInvalidConfig, "server "+cfg.Name+" is configured twice")
		}
		s, err := c.newServer(&cfg)
		if err != nil {
			return nil, err
		}
		c.servers[cfg.Name] = s
		c.order = append(c.order, s)
	}
	return c, nil
}

// Servers returns the names of the configured servers, in order.
func (c *Client) Servers() []string {
	out := make([]string, len(c.order))
	for i, s := range c.order {
		out[i] = s.cfg.Name
	}
	return out
}

// Close disconnects from every server, stops the stdio servers (close
// stdin, then SIGTERM, then SIGKILL, each after TerminateDuration) and
// waits for them. Calls in flight fail with TOOL_UNAVAILABLE. Close is
// idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	var errs []error
	var wg sync.WaitGroup
	var emu sync.Mutex
	for _, s := range c.order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.close(); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		}()
	}
	wg.Wait()
	c.wg.Wait()
	return errors.Join(errs...)
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *Client) server(name string) (*server, error) {
	s, ok := c.servers[name]
	if !ok {
		return nil, wrap(ErrUnknownServer, name)
	}
	return s, nil
}

// server is one configured server and its connection.
type server struct {
	c      *Client
	cfg    *ServerConfig
	sdkc   *sdk.Client
	stderr *stderrLog
	httpc  *http.Client // for URL servers
	limit  int

	connect chan struct{} // a one-slot lock held while connecting

	mu       sync.Mutex
	sess     *sdk.ClientSession
	tools    *toolSet
	toolsGen uint64 // bumped when the list is dropped
	failures int
	retryAt  time.Time
	closed   bool
}

func (c *Client) newServer(cfg *ServerConfig) (*server, error) {
	s := &server{c: c, cfg: cfg, connect: make(chan struct{}, 1)}
	s.limit = c.opts.MaxResultBytes
	if cfg.MaxResultBytes > 0 {
		s.limit = cfg.MaxResultBytes
	}
	s.stderr = &stderrLog{log: c.opts.Logger, server: cfg.Name}
	s.sdkc = sdk.NewClient(c.opts.ClientInfo, &sdk.ClientOptions{
		Logger: c.opts.Logger,
		// Advertise nothing: the adapter answers no server requests
		// (roots, sampling, elicitation).
		Capabilities:                &sdk.ClientCapabilities{},
		ProgressNotificationHandler: c.onProgress,
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			s.dropTools()
			if f := c.opts.OnToolsChanged; f != nil {
				go f(cfg.Name)
			}
		},
	})
	if cfg.URL != "" {
		// Every dial goes through the egress policy, proxies off
		// (docs/protocol.md §6).
		hc, base, err := c.opts.Egress.Client(cfg.HTTPClient)
		if err != nil {
			return nil, wrap(ErrInvalidConfig, "server "+cfg.Name+": "+err.Error())
		}
		hc.Transport = &httpTransport{base: base, headers: cfg.Headers, limit: s.limit}
		s.httpc = hc
	}
	return s, nil
}

func (s *server) timeout() time.Duration {
	if s.cfg.Timeout > 0 {
		return s.cfg.Timeout
	}
	return s.c.opts.Timeout
}

func (s *server) transport(ctx context.Context) (sdk.Transport, error) {
	switch {
	case s.cfg.Transport != nil:
		return s.cfg.Transport(ctx)
	case s.cfg.Command != "":
		return &stdioTransport{cfg: s.cfg, log: s.c.opts.Logger, stderr: s.stderr, limit: s.limit, terminate: s.c.opts.TerminateDuration}, nil
	default:
		return &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpc, MaxRetries: 2}, nil
	}
}

// unavailable is a connection failure: retryable TOOL_UNAVAILABLE.
type unavailable struct {
	server     string
	retryAfter time.Duration
	err        error
}

func (e *unavailable) Error() string {
	s := "MCP server mcp:" + e.server + " is unavailable"
	if e.err != nil {
		s += ": " + e.err.Error()
	}
	return s
}

func (e *unavailable) Unwrap() error { return e.err }

// session returns the live session, connecting if there is none.
func (s *server) session(ctx context.Context) (*sdk.ClientSession, error) {
	if cs, err := s.current(); cs != nil || err != nil {
		return cs, err
	}
	select {
	case s.connect <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.connect }()
	if cs, err := s.current(); cs != nil || err != nil {
		return cs, err
	}
	cctx, cancel := context.WithTimeout(ctx, s.c.opts.ConnectTimeout)
	defer cancel()
	tr, err := s.transport(cctx)
	if err == nil {
		var cs *sdk.ClientSession
		cs, err = s.sdkc.Connect(cctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: s.c.opts.ProtocolVersion})
		if err == nil {
			return s.adopt(cs)
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	s.mu.Lock()
	s.failures++
	wait := min(s.c.opts.MaxBackoff, 100*time.Millisecond<<min(s.failures-1, 16))
	s.retryAt = time.Now().Add(wait)
	s.mu.Unlock()
	s.c.opts.Logger.Warn("mcp: connecting failed", "mcp_server", s.cfg.Name, "err", err, "retry_in", wait)
	return nil, &unavailable{server: s.cfg.Name, err: err}
}

// current returns the live session, or an error while the server is
// closed or backing off after failed connections.
func (s *server) current() (*sdk.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, &unavailable{server: s.cfg.Name, err: ErrClosed}
	}
	if s.sess != nil {
		return s.sess, nil
	}
	if d := time.Until(s.retryAt); d > 0 {
		return nil, &unavailable{server: s.cfg.Name, retryAfter: d, err: errors.New("backing off after failed connection attempts")}
	}
	return nil, nil
}

// adopt makes cs the server's session and watches it: when the connection
// ends (the process crashed, the server went away) the session is dropped,
// so the next call starts a fresh one.
func (s *server) adopt(cs *sdk.ClientSession) (*sdk.ClientSession, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = cs.Close()
		return nil, &unavailable{server: s.cfg.Name, err: ErrClosed}
	}
	s.sess = cs
	s.failures = 0
	s.retryAt = time.Time{}
	s.tools = nil
	s.toolsGen++
	s.mu.Unlock()
	if r := cs.InitializeResult(); r != nil {
		name := ""
		if r.ServerInfo != nil {
			name = r.ServerInfo.Name + " " + r.ServerInfo.Version
		}
		s.c.opts.Logger.Debug("mcp: connected", "mcp_server", s.cfg.Name, "protocol", r.ProtocolVersion, "server_info", name)
	}
	s.c.wg.Add(1)
	go func() {
		defer s.c.wg.Done()
		err := cs.Wait()
		if s.forget(cs) {
			s.c.opts.Logger.Warn("mcp: connection ended", "mcp_server", s.cfg.Name, "err", err)
			_ = cs.Close() // reap the process
		}
	}()
	return cs, nil
}

// forget drops cs if it is the current session, reporting whether it was.
func (s *server) forget(cs *sdk.ClientSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != cs {
		return false
	}
	s.sess = nil
	s.tools = nil
	s.toolsGen++
	return true
}

// drop closes a broken session in the background; the next call
// reconnects.
func (s *server) drop(cs *sdk.ClientSession) {
	if !s.forget(cs) {
		return
	}
	s.c.wg.Add(1)
	go func() {
		defer s.c.wg.Done()
		_ = cs.Close()
	}()
}

func (s *server) close() error {
	s.mu.Lock()
	s.closed = true
	cs := s.sess
	s.sess = nil
	s.mu.Unlock()
	var err error
	if cs != nil {
		err = cs.Close()
		if err != nil && isBenignClose(err) {
			err = nil
		}
	}
	if s.httpc != nil {
		s.httpc.CloseIdleConnections()
	}
	return err
}

func isBenignClose(err error) bool {
	return errors.Is(err, sdk.ErrConnectionClosed) || strings.Contains(err.Error(), "closed")
}

func (s *server) dropTools() {
	s.mu.Lock()
	s.tools = nil
	s.toolsGen++
	s.mu.Unlock()
}

// toolSet returns the cached tool list, loading it when needed.
func (s *server) toolSet(ctx context.Context, refresh bool) (*toolSet, error) {
	if ts := s.cachedTools(); ts != nil && !refresh {
		return ts, nil
	}
	cs, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	gen := s.toolsGen
	s.mu.Unlock()
	var tools []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			if isConnectionError(err) {
				s.drop(cs)
			}
			return nil, err
		}
		tools = append(tools, t)
	}
	ts := newToolSet(s.cfg.Name, tools)
	s.mu.Lock()
	if s.toolsGen == gen && s.sess == cs {
		s.tools = ts
	}
	s.mu.Unlock()
	return ts, nil
}

// cachedTools returns the cached list without any I/O, nil when none.
func (s *server) cachedTools() *toolSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

// Tools returns the tools of a server, from the cache when it holds them
// (connecting and listing otherwise).
func (c *Client) Tools(ctx context.Context, server string) ([]Tool, error) {
	s, err := c.server(server)
	if err != nil {
		return nil, err
	}
	ts, err := s.toolSet(ctx, false)
	if err != nil {
		return nil, s.listError(err)
	}
	return append([]Tool(nil), ts.list...), nil
}

// Refresh loads the tool lists again: of one server, or of all when
// server is "".
func (c *Client) Refresh(ctx context.Context, server string) error {
	var errs []error
	for _, s := range c.order {
		if server != "" && s.cfg.Name != server {
			continue
		}
		if _, err := s.toolSet(ctx, true); err != nil {
			errs = append(errs, s.listError(err))
		}
	}
	if server != "" && c.servers[server] == nil {
		return wrap(ErrUnknownServer, server)
	}
	return errors.Join(errs...)
}

// LLMTools returns the tools of every server, in configuration order, each
// with its flattened LLMName. Servers that cannot be reached are left out
// and their errors joined into the returned error, so a caller can go on
// with the tools it has.
func (c *Client) LLMTools(ctx context.Context) ([]Tool, error) {
	var out []Tool
	var errs []error
	for _, s := range c.order {
		ts, err := s.toolSet(ctx, false)
		if err != nil {
			errs = append(errs, s.listError(err))
			continue
		}
		out = append(out, ts.list...)
	}
	return out, errors.Join(errs...)
}

// Resolve maps a flattened LLM name back to its server and tool. It uses
// the cached tool lists; for a server whose list is not loaded it assumes
// the tool name is the rest of the name.
func (c *Client) Resolve(llmName string) (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(llmName, "mcp_")
	if !found {
		return "", "", false
	}
	server, tool, found = strings.Cut(rest, "_")
	if !found || tool == "" {
		return "", "", false
	}
	s, exists := c.servers[server]
	if !exists {
		return "", "", false
	}
	if ts := s.cachedTools(); ts != nil {
		name, known := ts.byLLM[llmName]
		return server, name, known
	}
	return server, tool, true
}

// listError turns a tool-list failure into a *ToolError.
func (s *server) listError(err error) error {
	o := classifyError(err, "", 0)
	return &ToolError{Code: o.code, Message: o.message, Retryable: o.retryable, Details: mergeDetails(o.details, map[string]any{"server": s.cfg.Name, "tool": ServerID(s.cfg.Name)}), Err: err}
}
