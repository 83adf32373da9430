package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/atomicfile"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/demo"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/keyfile"
	"github.com/clutchprotocol/clutch/gateway"
	"github.com/clutchprotocol/clutch/gateway/agui"
	"github.com/clutchprotocol/clutch/gateway/ui"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/rules"
	"github.com/clutchprotocol/clutch/rules/rulesapi"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/retention"
)

func init() {
	register(&command{
		name:    "serve",
		summary: "serve the gateway API and the web UI over a store file",
		usage:   "clutch serve [flags]",
		help: `Opens the store file --db for writing (creating it if needed), starts a router
over it and serves the gateway on --addr: the /v1 API, the live streams (SSE and
WebSocket) and the web UI at /. Stops cleanly on Ctrl-C (SIGINT) or SIGTERM.

API keys come from any of these (all that are given count):

  --keys-file FILE     a JSON object of key to caller, readable by its owner
                       only (chmod 600; another mode is refused):
    {"<key of 16+ characters>": {"agent_id": "agent:alice", "scopes": ["submit"]}}
                       scopes: submit, read:all, agents, admin (any other
                       scope is refused at start)
  $CLUTCH_SERVE_KEYS   keys separated by commas or spaces, each KEY (an admin)
                       or AGENT=KEY (the caller agent:NAME, an admin)
  --key KEY            the same, repeatable; other users of the machine can
                       read a command line (ps), so serve warns

With none of them, serve keeps an admin key in the file --db + .keys.json
(mode 0600, the --keys-file format): the first start makes the key and prints
it, later starts use it again and say where it is. The UI asks for a key when
it opens.

Limits (package auth; docs/protocol.md §6.7): each caller gets --rate
requests a second (burst --burst) and at most --max-in-flight-per-caller of
the --max-in-flight requests served at once, streams included; past them a
request gets 429 or 503 with Retry-After. A request body must arrive within
--read-timeout, an answer that is not a stream be written within
--write-timeout, and an idle keep-alive connection closes after
--idle-timeout.

The rules library of --rules-workspace (package rules) is served at /v1/rules
(package rules/rulesapi), for clutch rules --url and other reviewers.

Retention (package store/retention, as clutch prune does for a file no
process holds): with --retain-max-age, --retain-max-runs or
--retain-max-bytes, the ended runs past the limit are removed at start and
every --retain-every, archived first in --retain-archive DIR when given, each
leaving a tombstone; running and waiting runs are never removed. --demo keeps
its last 1000 ended runs unless a --retain limit is given, so a demo left
running does not fill the disk.

--agui-agent AGENT serves AG-UI (for @ag-ui/client front ends) at /v1/agui,
submitting each run to AGENT; with --demo it is on, for the demo lead.

--demo registers a demo team and plays a research round, then pauses
--demo-every, over and over (no network, no API keys): the UI asks for a
brief on a topic (the run's title); a lead splits it into tracks and hands
them to two or three researchers at once; each calls a fake tool (web,
papers or market data) and reports its progress; one of them fails once
and its retry succeeds. Tasks take 1 to 4 seconds, a round about 5 to 10.
Now and then a track fails for good: the lead writes the brief without it,
or the run fails when the brief needs it. Some rounds ask the requester
first — a choice of region, or the approval of a paid query — and wait for
an answer, which an admin key (the one serve keeps) may give from the UI
or with clutch answer; rounds go on meanwhile, and a question nobody
answers within 2 minutes ends its run with TIMEOUT. The demo's agents sign
their events with keys made at start; their public keys are added to the
key file --demo-keys (default: the store file's name + .demo-keys.json),
which keeps those of earlier starts, so clutch verify --keys FILE checks
every signature the demo made in the store, across restarts.

With OTEL_EXPORTER_OTLP_ENDPOINT set (http://localhost:4318 for a local
collector or Jaeger), traces and metrics (package telemetry) are exported over
OTLP/HTTP, configured by the standard OTEL_EXPORTER_OTLP_* variables; a request
with a W3C traceparent header continues the caller's trace.`,
		examples: `  clutch serve --demo                       # a live UI at http://127.0.0.1:8080
  CLUTCH_SERVE_KEYS=agent:ops=$OPS_KEY clutch serve --db team.db --addr :8080
  clutch serve --keys-file keys.json --cors https://app.example.com
  clutch verify --db clutch.db --keys clutch.db.demo-keys.json   # the demo's signatures`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			db := fs.String("db", getenv("CLUTCH_DB", "clutch.db"), "the store file, opened for writing ($CLUTCH_DB)")
			addr := fs.String("addr", "127.0.0.1:8080", "the address to listen on")
			var keys, cors listFlag
			fs.Var(&keys, "key", "an API key: KEY (admin) or AGENT=KEY; repeatable; visible in the process list: prefer --keys-file or $CLUTCH_SERVE_KEYS")
			keysFile := fs.String("keys-file", "", "a JSON file of API keys, mode 0600: {\"KEY\": {\"agent_id\": ..., \"scopes\": [...]}}")
			fs.Var(&cors, "cors", "an origin allowed to call the API from a browser (scheme://host[:port]); repeatable")
			withDemo := fs.Bool("demo", false, "run the demo team continuously")
			demoEvery := fs.Duration("demo-every", 3*time.Second, "the pause between demo rounds")
			demoKeys := fs.String("demo-keys", "", "with --demo, the key file the demo's public keys are added to (default: the --db file + .demo-keys.json)")
			noUI := fs.Bool("no-ui", false, "serve the API only")
			aguiAgent := fs.String("agui-agent", "", "serve AG-UI at /v1/agui, sending each run to this agent (with --demo: the demo lead)")
			rulesWS := fs.String("rules-workspace", "default", "the workspace of the rules library served at /v1/rules")
			var retainAge ageFlag
			fs.Var(&retainAge, "retain-max-age", "retention: remove ended runs whose last event is older than `AGE` (720h, 30d)")
			retainRuns := fs.Int("retain-max-runs", 0, "retention: keep at most `N` ended runs (with --demo: 1000 unless a --retain flag is given)")
			var retainBytes sizeFlag
			fs.Var(&retainBytes, "retain-max-bytes", "retention: remove the oldest ended runs while the runs' events hold more than `SIZE` (20G)")
			retainArchive := fs.String("retain-archive", "", "retention: write each run to a file in `DIR` before removing it")
			retainEvery := fs.Duration("retain-every", time.Hour, "retention: how often the policy is applied (and once at start)")
			var lim limitFlags
			fs.Float64Var(&lim.rate, "rate", 20, "each caller's sustained requests per second (0: no rate limit)")
			fs.IntVar(&lim.burst, "burst", 40, "each caller's burst of requests above --rate")
			fs.IntVar(&lim.inFlight, "max-in-flight", 256, "requests served at once, streams included (0: no limit)")
			fs.IntVar(&lim.perCaller, "max-in-flight-per-caller", 0, "requests one caller has in flight at once (0: a quarter of --max-in-flight; -1: no limit)")
			fs.DurationVar(&lim.read, "read-timeout", 30*time.Second, "the time to read a request's body")
			fs.DurationVar(&lim.write, "write-timeout", time.Minute, "the time to write an answer that is not a stream")
			fs.DurationVar(&lim.idle, "idle-timeout", 2*time.Minute, "how long an idle keep-alive connection stays open")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected argument %q", args[0])
				}
				if *demoEvery <= 0 {
					return usagef("--demo-every must be positive")
				}
				if *retainRuns < 0 {
					return usagef("--retain-max-runs must not be negative")
				}
				if *retainEvery <= 0 {
					return usagef("--retain-every must be positive")
				}
				retain := retention.Policy{MaxAge: retainAge.d, MaxRuns: *retainRuns, MaxBytes: retainBytes.n, Note: "clutch serve"}
				if *retainArchive != "" {
					retain.Archive = &retention.Archive{Dir: *retainArchive}
				}
				if retain.MaxAge == 0 && retain.MaxRuns == 0 && retain.MaxBytes == 0 {
					if !*withDemo && (flagSet(fs, "retain-archive") || flagSet(fs, "retain-every")) {
						return usagef("--retain-archive and --retain-every apply a policy: give --retain-max-age, --retain-max-runs or --retain-max-bytes")
					}
					if *withDemo {
						retain.MaxRuns = 1000 // a demo left running does not fill the disk
					}
				}
				callers, err := apiKeys(keys, *keysFile, os.Getenv(envServeKeys))
				if err != nil {
					return err
				}
				if len(keys) > 0 {
					fmt.Fprintf(e.stderr, "clutch serve: warning: other users of this machine can read a --key in the process list; use --keys-file or $%s\n", envServeKeys)
				}
				return serve(ctx, e, serveConfig{
					db: *db, addr: *addr, keys: callers, cors: cors,
					demo: *withDemo, demoEvery: *demoEvery, demoKeys: *demoKeys, demoOptions: demoOptions, ui: !*noUI, aguiAgent: *aguiAgent, rulesWorkspace: *rulesWS,
					limits: lim, retain: retain, retainEvery: *retainEvery,
				})
			}
		},
	})
}

// retain applies p to st at once and then every every, until ctx ends,
// and says on stdout what each application removed.
func retain(ctx context.Context, e *env, logger *slog.Logger, st store.Store, p retention.Policy, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		rep, err := retention.Apply(ctx, st, p)
		if len(rep.Removed) > 0 {
			fmt.Fprintf(e.stdout, "clutch: retention removed %d runs (%d bytes); %d ended runs kept\n", len(rep.Removed), rep.Bytes, rep.Ended-len(rep.Removed))
		}
		if err != nil && ctx.Err() == nil {
			logger.Warn("clutch serve: retention", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// policyWords says what p keeps.
func policyWords(p retention.Policy) string {
	var w []string
	if p.MaxAge > 0 {
		w = append(w, "ended runs older than "+p.MaxAge.String()+" go")
	}
	if p.MaxRuns > 0 {
		w = append(w, "at most "+strconv.Itoa(p.MaxRuns)+" ended runs kept")
	}
	if p.MaxBytes > 0 {
		w = append(w, "runs' events held to "+strconv.FormatInt(p.MaxBytes, 10)+" bytes")
	}
	if p.Archive != nil {
		w = append(w, "archived in "+p.Archive.Dir+" first")
	}
	return strings.Join(w, "; ")
}

// demoOptions are the demo's options: nil, real time; tests make rounds
// take milliseconds.
var demoOptions *demo.Options

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// operator is the caller of a key given without an agent id.
const operator = "agent:operator"

// envServeKeys names the environment variable of serve's keys: KEY or
// AGENT=KEY, as --key takes them, separated by commas or white space. The
// environment of a process is readable by its user only, its command
// line by everybody on the machine.
const envServeKeys = "CLUTCH_SERVE_KEYS"

// errKeysFile: a key file of serve that may not be used as it is.
var errKeysFile error = coded.New("unusable key file", protocol.CodeInvalidField)

// storeKeysFile is the key file serve keeps beside the store db: the
// admin key it made at its first start without keys, reused on restart.
func storeKeysFile(db string) string { return db + ".keys.json" }

// apiKeys builds the key → caller map of --key (keys), --keys-file (file)
// and $CLUTCH_SERVE_KEYS (env). It is empty when none gives a key: serve
// then uses the store's key file (storeKeys).
func apiKeys(keys []string, file, env string) (map[string]auth.Caller, error) {
	out := map[string]auth.Caller{}
	if err := addKeys(out, keys, "--key"); err != nil {
		return nil, err
	}
	if err := addKeys(out, strings.FieldsFunc(env, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }), "$"+envServeKeys); err != nil {
		return nil, err
	}
	if file != "" {
		fromFile, err := loadKeysFile(file)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, fromFile)
	}
	return out, nil
}

// addKeys adds keys of the form KEY (an admin) or AGENT=KEY to out; what
// names where they come from, for errors.
func addKeys(out map[string]auth.Caller, keys []string, what string) error {
	for _, k := range keys {
		agent, key, ok := strings.Cut(k, "=")
		if !ok {
			agent, key = operator, k
		}
		if !strings.HasPrefix(agent, "agent:") {
			return usagef("%s %s...: the caller must be an agent id (agent:name=KEY)", what, clip(k, 8))
		}
		out[key] = auth.Caller{AgentID: agent, Scopes: []string{auth.ScopeAdmin}}
	}
	return nil
}

// loadKeysFile reads a key file: it must be readable by its owner only
// (it holds secrets; on Windows, where modes say nothing of that, any
// mode is accepted), parse, and hold valid keys, callers and scopes.
func loadKeysFile(path string) (map[string]auth.Caller, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, coded.Wrap(errKeysFile, fmt.Sprintf("%s: mode %04o lets other users read its keys (chmod 600 %s)", path, perm, path), nil)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	keys, err := parseKeysFile(data)
	if err != nil {
		return nil, coded.Wrap(errKeysFile, path, err)
	}
	// Unknown scopes, bad agent ids and short keys are refused here,
	// before anything starts.
	if _, err := auth.APIKeys(keys); err != nil {
		return nil, coded.Wrap(errKeysFile, path, err)
	}
	return keys, nil
}

// parseKeysFile reads a key file: a JSON object of API key to
// {"agent_id", "scopes"}. Bad input gives an error, never a panic.
func parseKeysFile(data []byte) (map[string]auth.Caller, error) {
	var file map[string]keysFileEntry
	if err := jsonv2.Unmarshal(data, &file, jsonv2.RejectUnknownMembers(true)); err != nil {
		return nil, errors.New(jsonProblem(err) + `; want a JSON object of API key to {"agent_id": "agent:NAME", "scopes": [...]}`)
	}
	if file == nil {
		return nil, errors.New(`null; want a JSON object of API key to {"agent_id": "agent:NAME", "scopes": [...]}`)
	}
	out := make(map[string]auth.Caller, len(file))
	for k, c := range file {
		if !strings.HasPrefix(c.AgentID, "agent:") {
			return nil, fmt.Errorf("the agent_id %q of a key is not an agent id (agent:name)", c.AgentID)
		}
		out[k] = auth.Caller{AgentID: c.AgentID, Scopes: c.Scopes}
	}
	return out, nil
}

// storeKeys returns the keys of the store's key file, path, making it
// with a new admin key when it does not exist: the key is then returned as
// generated, to be printed once. The file is written whole (a temporary
// file linked into place) with mode 0600.
func storeKeys(path string) (keys map[string]auth.Caller, generated string, err error) {
	keys, err = loadKeysFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		if err != nil {
			err = fmt.Errorf("%w\n(serve keeps its admin key there: fix the file, or remove it to make a new key)", err)
		}
		return keys, "", err
	}
	b := make([]byte, 24)
	rand.Read(b)
	generated = base64.RawURLEncoding.EncodeToString(b)
	keys = map[string]auth.Caller{generated: {AgentID: operator, Scopes: []string{auth.ScopeAdmin}}}
	data, err := jsonv2.Marshal(map[string]keysFileEntry{generated: {AgentID: operator, Scopes: []string{auth.ScopeAdmin}}}, jsontext.WithIndent("  "))
	if err != nil {
		return nil, "", err
	}
	if err := writeNew(path, append(data, '\n')); err != nil {
		return nil, "", fmt.Errorf("keeping the admin key: %w", err)
	}
	return keys, generated, nil
}

// keysFileEntry is the caller of a key in a key file.
type keysFileEntry struct {
	AgentID string   `json:"agent_id"`
	Scopes  []string `json:"scopes"`
}

// writeNew writes data to a new file at path, mode 0600, whole or not at
// all; a file already at path is an error (fs.ErrExist), never replaced.
func writeNew(path string, data []byte) error {
	f, err := atomicfile.Create(path, 0o600)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.CommitNew()
}

type serveConfig struct {
	db, addr string
	// keys are the keys given (none: the store's key file).
	keys      map[string]auth.Caller
	cors      []string
	demo      bool
	demoEvery time.Duration
	// demoKeys is the key file of the demo's public keys ("": next to db).
	demoKeys string
	// demoOptions configure the demo team (nil: real time).
	demoOptions *demo.Options
	ui          bool
	aguiAgent   string
	// rulesWorkspace is the workspace of the rules library at /v1/rules.
	rulesWorkspace string
	limits         limitFlags
	// retain is the retention policy applied every retainEvery (none
	// when it has no limit).
	retain      retention.Policy
	retainEvery time.Duration
}

// limitFlags are the limits and timeouts of serve's flags.
type limitFlags struct {
	rate                       float64
	burst, inFlight, perCaller int
	read, write, idle          time.Duration
}

// options are the auth limits of the flags.
func (l limitFlags) options() *auth.Options {
	return &auth.Options{Rate: l.rate, Burst: l.burst, MaxInFlight: l.inFlight, MaxInFlightPerCaller: l.perCaller}
}

// server is the http.Server of h with the flags' timeouts: a slow header or
// an idle keep-alive is closed by net/http; a body must arrive within
// read, and an answer that is not a stream be written within write.
func (l limitFlags) server(h http.Handler) *http.Server {
	return &http.Server{Handler: deadlines(h, l.read, l.write), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: l.idle}
}

// deadlines sets a read deadline on requests with a body and a write
// deadline on answers that are not streams (the SSE and WebSocket streams
// and AG-UI runs live as long as their client wants). The server's own
// ReadTimeout and WriteTimeout would cut the streams too.
func deadlines(h http.Handler, read, write time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if read > 0 && r.Method != http.MethodGet && r.Method != http.MethodHead {
			_ = rc.SetReadDeadline(time.Now().Add(read))
		}
		if write > 0 && !isStream(r) {
			_ = rc.SetWriteDeadline(time.Now().Add(write))
		}
		h.ServeHTTP(w, r)
	})
}

// isStream reports whether r asks for a long-lived answer.
func isStream(r *http.Request) bool {
	p := r.URL.Path
	return p == "/v1/stream" || p == "/v1/ws" || strings.HasPrefix(p, "/v1/agui") ||
		strings.Contains(r.Header.Get("Accept"), "text/event-stream") || r.Header.Get("Upgrade") != ""
}

// serve runs the gateway until ctx is done.
func serve(ctx context.Context, e *env, c serveConfig) error {
	if _, err := auth.APIKeys(c.keys); err != nil {
		return err // before the store file is made
	}
	st, err := boltstore.Open(c.db, nil)
	if errors.Is(err, boltstore.ErrLocked) {
		return fmt.Errorf("%w\n(another process serves or writes this file: use its gateway, or another --db)", err)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	// With no key given, the admin key kept beside the store, made at the
	// first start: once the file is held, so that two starts on one store
	// cannot make two keys.
	keys, keysFile, generated := c.keys, "", ""
	if len(keys) == 0 {
		keysFile = storeKeysFile(c.db)
		if keys, generated, err = storeKeys(keysFile); err != nil {
			return err
		}
	}
	authn, err := auth.APIKeys(keys)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// OpenTelemetry over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set.
	tel, stopTel, err := otlpTelemetry(ctx, logger)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = stopTel(sctx) // flush what is left
	}()
	var rst store.Store = st
	var observer router.Observer
	if tel != nil {
		rst, observer = tel.WrapStore(st), tel
		fmt.Fprintf(e.stdout, "clutch: exporting traces and metrics to %s (OTLP/HTTP)\n", os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	}
	var team *demo.Team
	ropts := &registry.Options{}
	var signers map[string]router.SigningKey
	if c.demo {
		if team, err = demo.New(c.demoOptions); err != nil {
			return err
		}
		ropts.Keys, signers = team.Keys(), team.Signers()
		if c.demoKeys == "" {
			c.demoKeys = c.db + ".demo-keys.json"
		}
		// Before any event is signed: the file verifies all of them.
		if err := keyfile.Add(c.demoKeys, team.Keys()); err != nil {
			return fmt.Errorf("--demo-keys: %w", err)
		}
	}
	reg, err := registry.Open(ctx, rst, ropts)
	if err != nil {
		return err
	}
	schemas, err := schema.New(nil)
	if err != nil {
		return err
	}
	r, err := router.New(rst, reg, &router.Options{Validator: schemas, Logger: logger, Observer: observer, Signers: signers})
	if err != nil {
		return err
	}
	defer r.Close()
	// Tasks a previous process left open end as interrupted.
	if _, err := r.Recover(ctx); err != nil {
		return err
	}
	gopts := &gateway.Options{Auth: authn, CORS: c.cors, Logger: logger, Limits: c.limits.options()}
	if tel != nil {
		gopts.Subscribers = tel.Subscribed
	}
	lib, err := rules.Open(ctx, rst, &rules.Options{Workspace: c.rulesWorkspace, Schemas: schemas})
	if err != nil {
		return err
	}
	if gopts.Rules, err = rulesapi.New(lib, &rulesapi.Options{Logger: logger}); err != nil {
		return err
	}
	if c.ui {
		gopts.UI = ui.Handler(nil)
	}
	if c.demo || c.aguiAgent != "" {
		aopts := &agui.Options{Agent: c.aguiAgent, Logger: logger}
		if c.demo && (c.aguiAgent == "" || c.aguiAgent == demo.Lead) {
			// The demo lead takes research.query.v1: the user's last
			// message is the query.
			aopts.Request = func(_ context.Context, _ *auth.Caller, in *agui.Input) (*agui.Request, error) {
				q := "What is new in fintech?"
				if m, ok := in.LastUserMessage(); ok && strings.TrimSpace(m.Text()) != "" {
					q = m.Text()
				}
				return &agui.Request{PayloadType: "research.query.v1", Payload: schema.ResearchQuery{Query: q, MaxSources: 3},
					To: []string{demo.Lead}, Domain: "research"}, nil
			}
		}
		if gopts.AGUI, err = agui.New(r, aopts); err != nil {
			return err
		}
	}
	gw, err := gateway.New(r, gopts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	srv := c.limits.server(gw)
	srv.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(e.stdout, "clutch: serving %s on %s (UI at /, API at /v1/, rules at /v1/rules)\n", c.db, url)
	if gopts.AGUI != nil {
		fmt.Fprintf(e.stdout, "clutch: AG-UI at %s/v1/agui\n", url)
	}
	switch {
	case generated != "":
		fmt.Fprintf(e.stdout, "clutch: API key (admin, for the UI and --key): %s\n", generated)
		fmt.Fprintf(e.stdout, "clutch: the admin key is kept in %s (mode 0600) and used again on restart\n", keysFile)
	case keysFile != "":
		fmt.Fprintf(e.stdout, "clutch: API keys from %s (kept from an earlier start; the admin key is not printed again)\n", keysFile)
	}

	var wg sync.WaitGroup
	dctx, stopDemo := context.WithCancel(ctx)
	defer stopDemo()
	var demoErr error
	if team != nil {
		if err := team.Register(ctx, r); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "clutch: demo team running, %s between rounds\n", c.demoEvery)
		fmt.Fprintf(e.stdout, "clutch: demo keys in %s (clutch verify --db %s --keys %s)\n", c.demoKeys, c.db, c.demoKeys)
		wg.Go(func() { demoErr = team.Run(dctx, r, c.demoEvery) })
	}
	if p := c.retain; p.MaxAge > 0 || p.MaxRuns > 0 || p.MaxBytes > 0 {
		fmt.Fprintf(e.stdout, "clutch: retention every %s: %s\n", c.retainEvery, policyWords(p))
		wg.Go(func() { retain(dctx, e, logger, st, p, c.retainEvery) })
	}
	serveErr := make(chan error, 1)
	wg.Go(func() { serveErr <- srv.Serve(ln) })
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	stopDemo()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Streams are long requests: Shutdown waits for them until sctx,
	// then Close ends them.
	if serr := srv.Shutdown(sctx); serr != nil {
		srv.Close()
	}
	wg.Wait()
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		err = demoErr
	}
	if err == nil {
		err = r.Shutdown(sctx)
	}
	fmt.Fprintln(e.stdout, "clutch: stopped")
	return err
}
