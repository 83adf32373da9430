package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/atomicfile"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// Named contexts: where a command reads (a gateway and its key, or a
// store file) saved under a name in a config file, as `nats context`
// does. The file and the precedence are documented in doc.go ("Contexts").

// Errors of the contexts.
var (
	// errConfig: the config file does not parse or breaks a rule.
	errConfig error = coded.New("invalid config file", protocol.CodeInvalidField)
	// errNoContext: no context has the name given.
	errNoContext error = coded.New("context not found", protocol.CodeNotFound)
	// errContextKey: the key a context names cannot be read.
	errContextKey error = coded.New("context key unavailable", protocol.CodeUnauthorized)
)

// contextError is a problem with one named context: its text names the
// context, and errors.Is matches its sentinel (and so its code) and its
// cause.
type contextError struct {
	name     string
	sentinel error
	detail   string
	cause    error
}

func (e *contextError) Error() string {
	s := "context " + strconv.Quote(e.name) + ": " + e.detail
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

func (e *contextError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.sentinel}
	}
	return []error{e.sentinel, e.cause}
}

// noContext is the error of a name no context has.
func noContext(name string) error {
	return &noContextError{name}
}

// noContextError says that a context does not exist, and how to list them.
type noContextError struct{ name string }

func (e *noContextError) Error() string {
	return "context " + strconv.Quote(e.name) + " not found (clutch context ls lists them)"
}

func (e *noContextError) Unwrap() error { return errNoContext }

// Limits of what a config names.
const (
	maxConfigBytes = 1 << 20
	maxKeyBytes    = 64 << 10
)

// contextName is a context's name: it goes on command lines and into
// completion scripts, so it is a plain word.
var contextName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)

// envName is an environment variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// config is the config file.
type config struct {
	Current  string                  `json:"current,omitempty"`
	Contexts map[string]contextEntry `json:"contexts"`
}

// contextEntry is one named context. At most one of KeyFile, KeyEnv and
// Key is set; at least one of URL and DB.
type contextEntry struct {
	Description string `json:"description,omitempty"`
	URL         string `json:"url,omitempty"`
	DB          string `json:"db,omitempty"`
	KeyFile     string `json:"key_file,omitempty"`
	KeyEnv      string `json:"key_env,omitempty"`
	Key         string `json:"key,omitempty"`
}

// configPath is $CLUTCH_CONFIG, else clutch/config.json in the user's
// config directory.
func configPath() (string, error) {
	if p := os.Getenv("CLUTCH_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no config directory (set $CLUTCH_CONFIG): %w", err)
	}
	return filepath.Join(dir, "clutch", "config.json"), nil
}

// loadConfig reads the config file at path; a missing file is an empty
// config.
func loadConfig(path string) (*config, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &config{Contexts: map[string]contextEntry{}}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxConfigBytes {
		return nil, coded.Wrap(errConfig, path+": over 1 MiB", nil)
	}
	c, err := parseConfig(data)
	if err != nil {
		return nil, coded.Wrap(errConfig, path, err)
	}
	return c, nil
}

// parseConfig decodes and checks a config file: strict JSON (no
// duplicate or unknown member, valid UTF-8), valid names, URLs and key
// sources, and a current context that exists.
func parseConfig(data []byte) (*config, error) {
	var c config
	if err := jsonv2.Unmarshal(data, &c, jsonv2.RejectUnknownMembers(true)); err != nil {
		return nil, errors.New(jsonProblem(err))
	}
	if c.Contexts == nil {
		c.Contexts = map[string]contextEntry{}
	}
	for _, name := range c.names() {
		if err := c.Contexts[name].check(name); err != nil {
			return nil, err
		}
	}
	if _, ok := c.Contexts[c.Current]; c.Current != "" && !ok {
		return nil, fmt.Errorf("current context %q is not in the file", c.Current)
	}
	return &c, nil
}

// check checks one context of the file.
func (ce contextEntry) check(name string) error {
	if !contextName.MatchString(name) {
		return fmt.Errorf("context name %q: want letters, digits, _ . - (at most 64, not starting with . or -)", name)
	}
	if ce.URL == "" && ce.DB == "" {
		return fmt.Errorf("context %q: want a url or a db", name)
	}
	if ce.URL != "" {
		if _, err := client.New(ce.URL, "", nil); err != nil {
			return fmt.Errorf("context %q: %w", name, err)
		}
	}
	n := 0
	for _, s := range []string{ce.KeyFile, ce.KeyEnv, ce.Key} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("context %q: at most one of key_file, key_env and key", name)
	}
	if ce.KeyEnv != "" && !envName.MatchString(ce.KeyEnv) {
		return fmt.Errorf("context %q: key_env %q is not a variable name", name, ce.KeyEnv)
	}
	return nil
}

// names are the contexts' names, sorted.
func (c *config) names() []string {
	names := make([]string, 0, len(c.Contexts))
	for n := range c.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// save writes the config to path atomically (a temporary file in the same
// folder, then a rename), readable by its owner only: it may hold a key.
// The folder is created, for its owner only, if needed.
func (c *config) save(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	out, err := jsonv2.Marshal(c, jsonv2.Deterministic(true), jsontext.WithIndent("  "))
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(out, '\n'), 0o600)
}

// key returns the API key the context names, or "" when it names none.
func (ce contextEntry) key(name string) (string, error) {
	switch {
	case ce.Key != "":
		return ce.Key, nil
	case ce.KeyEnv != "":
		k := os.Getenv(ce.KeyEnv)
		if k == "" {
			return "", &contextError{name, errContextKey, "$" + ce.KeyEnv + " is not set", nil}
		}
		return k, nil
	case ce.KeyFile != "":
		f, err := os.Open(ce.KeyFile)
		if err != nil {
			return "", &contextError{name, errContextKey, "key file " + ce.KeyFile, fileErrReason(err)}
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxKeyBytes+1))
		if err != nil {
			return "", &contextError{name, errContextKey, "key file " + ce.KeyFile, fileErrReason(err)}
		}
		k := strings.TrimSpace(string(data))
		switch {
		case len(data) > maxKeyBytes:
			return "", &contextError{name, errContextKey, "key file " + ce.KeyFile + " is over 64 KiB", nil}
		case k == "":
			return "", &contextError{name, errContextKey, "key file " + ce.KeyFile + " is empty", nil}
		}
		return k, nil
	}
	return "", nil
}

// fileErrReason is a file error without its operation and path, which the
// message says already ("open /x: no such file or directory" is "no such
// file or directory").
func fileErrReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// keySource says where a context's key comes from, never the key.
func (ce contextEntry) keySource() string {
	switch {
	case ce.Key != "":
		return "stored in the config file"
	case ce.KeyEnv != "":
		state := "not set"
		if os.Getenv(ce.KeyEnv) != "" {
			state = "set"
		}
		return "from $" + ce.KeyEnv + " (" + state + ")"
	case ce.KeyFile != "":
		state := "readable"
		if f, err := os.Open(ce.KeyFile); err != nil {
			state = "cannot be read: " + fileErrReason(err).Error()
		} else {
			f.Close()
		}
		return "from the file " + ce.KeyFile + " (" + state + ")"
	}
	return "none"
}

// contextFlag is --context: the name of the context a command uses.
type contextFlag struct{ name string }

func (c *contextFlag) String() string     { return c.name }
func (c *contextFlag) Set(s string) error { c.name = s; return nil }

// bindContext registers --context on a command with --url, --key and
// maybe --db; runContext calls applyContext once the flags are parsed.
func bindContext(fs *flag.FlagSet) {
	fs.Var(&contextFlag{}, "context", "the url, key and db of the named context `NAME` where neither their flag nor their variable gives one (default $CLUTCH_CONTEXT, else the current context; see clutch context --help)")
}

// applyContext fills --url, --key and --db from the selected context
// where neither the flag nor its environment variable gave a value:
//
//	flag > environment variable > --context or $CLUTCH_CONTEXT > the current context > clutch.db
//
// A --db or $CLUTCH_DB means the file: the context's url is then not
// used. The context's key is read only when a gateway is used.
func applyContext(fs *flag.FlagSet) error {
	f := fs.Lookup("context")
	if f == nil {
		return nil
	}
	cf, ok := f.Value.(*contextFlag)
	if !ok {
		return nil
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	byHand := func(flagName, envName string) bool {
		return fs.Lookup(flagName) == nil || given[flagName] || os.Getenv(envName) != ""
	}
	name, chosen := cf.name, given["context"]
	if !chosen {
		name = os.Getenv("CLUTCH_CONTEXT")
		chosen = name != ""
	}
	dbByHand := fs.Lookup("db") != nil && (given["db"] || os.Getenv("CLUTCH_DB") != "")
	urlOpen := !byHand("url", "CLUTCH_URL") && !dbByHand
	if !chosen && !urlOpen && byHand("key", "CLUTCH_API_KEY") && byHand("db", "CLUTCH_DB") {
		return nil // every value given: the config is not read
	}
	path, err := configPath()
	if err != nil {
		if chosen {
			return err
		}
		return nil
	}
	c, err := loadConfig(path)
	if err != nil {
		return err
	}
	if !chosen {
		name = c.Current
		if name == "" {
			return nil
		}
	}
	ce, ok := c.Contexts[name]
	if !ok {
		return noContext(name)
	}
	if urlOpen && ce.URL != "" {
		fs.Lookup("url").Value.Set(ce.URL)
	}
	if !byHand("db", "CLUTCH_DB") && ce.DB != "" {
		fs.Lookup("db").Value.Set(ce.DB)
	}
	if u := fs.Lookup("url"); u != nil && u.Value.String() != "" && !byHand("key", "CLUTCH_API_KEY") {
		k, err := ce.key(name)
		if err != nil {
			return err
		}
		if k != "" {
			fs.Lookup("key").Value.Set(k)
		}
	}
	return nil
}

// contextJSON is a context as ls --json and show --json print it: the
// config's entry without the key.
type contextJSON struct {
	Name        string `json:"name"`
	Selected    bool   `json:"selected"`
	Description string `json:"description,omitempty"`
	URL         string `json:"url,omitempty"`
	DB          string `json:"db,omitempty"`
	KeyFile     string `json:"key_file,omitempty"`
	KeyEnv      string `json:"key_env,omitempty"`
	KeyStored   bool   `json:"key_stored,omitempty"`
}

func init() {
	register(&command{
		name:    "context",
		summary: "save, list and choose named gateways and files (--context)",
		usage:   "clutch context add|ls|use|show|rm [flags] [NAME]",
		help: `Saves where commands read — a gateway's URL and where its key comes from, or
a store file — under a name, as 'nats context' does, so that --url, --key
and --db need not be typed. Every command with --url takes --context NAME
(default $CLUTCH_CONTEXT, else the current context) and uses the context's
values where neither the flag nor its variable gives one:

  flag > variable ($CLUTCH_URL, $CLUTCH_API_KEY, $CLUTCH_DB)
       > --context or $CLUTCH_CONTEXT > the current context > clutch.db

A --db or $CLUTCH_DB means the file: the context's url is then not used.

  add NAME     save a context: --url and/or --db; the key from --key-file,
               --key-env or --key (stored in the file); --description;
               --use makes it current; --force replaces one of that name
  ls           list the contexts; * marks the one commands use
               (--names: the names only)
  use NAME     make NAME the current context (--none: no current context)
  show [NAME]  a context (default: the one commands use); the key's source
               is shown, never the key
  rm NAME      remove a context

The contexts live in $CLUTCH_CONFIG, else clutch/config.json in the user's
config directory (on Linux ~/.config), written atomically, readable by its
owner only.`,
		examples: `  clutch context add prod --url https://clutch.example.com --key-file ~/.clutch/prod.key --use
  clutch context add local --db ~/team/clutch.db --description "the laptop's store"
  clutch context ls
  clutch runs --context local
  CLUTCH_CONTEXT=prod clutch tail
  clutch context show prod --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			url := fs.String("url", "", "add: the gateway's URL")
			db := fs.String("db", "", "add: the store file")
			key := fs.String("key", "", "add: the API key, stored in the config file (--key-file or --key-env keep it out)")
			keyFile := fs.String("key-file", "", "add: read the API key from this file when the context is used")
			keyEnv := fs.String("key-env", "", "add: read the API key from this environment variable when the context is used")
			desc := fs.String("description", "", "add: what the context is for")
			force := fs.Bool("force", false, "add: replace a context of the same name")
			use := fs.Bool("use", false, "add: make the new context current")
			none := fs.Bool("none", false, "use: no current context")
			names := fs.Bool("names", false, "ls: print the names only, one a line")
			asJSON := fs.Bool("json", false, "ls, show: print JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) == 0 {
					return usagef("want a subcommand: add, ls, use, show or rm")
				}
				sub, args := args[0], args[1:]
				allowed := map[string]string{
					"add":  "url db key key-file key-env description force use",
					"ls":   "names json",
					"use":  "none",
					"show": "json",
					"rm":   "",
				}
				ok, known := allowed[sub]
				if !known {
					return usagef("unknown subcommand %q: want add, ls, use, show or rm", sub)
				}
				var bad error
				fs.Visit(func(f *flag.Flag) {
					if bad == nil && !strings.Contains(" "+ok+" ", " "+f.Name+" ") {
						bad = usagef("--%s is not a flag of context %s", f.Name, sub)
					}
				})
				if bad != nil {
					return bad
				}
				path, err := configPath()
				if err != nil {
					return err
				}
				c, err := loadConfig(path)
				if err != nil {
					return err
				}
				switch sub {
				case "add":
					if len(args) != 1 {
						return usagef("want one NAME")
					}
					return contextAdd(e, c, path, args[0], contextEntry{Description: *desc, URL: *url, DB: *db, KeyFile: *keyFile, KeyEnv: *keyEnv, Key: *key}, *force, *use)
				case "ls":
					if len(args) != 0 {
						return usagef("ls takes no argument")
					}
					return contextList(e, c, *names, *asJSON)
				case "use":
					switch {
					case *none && len(args) == 0:
						c.Current = ""
						if err := c.save(path); err != nil {
							return err
						}
						fmt.Fprintln(e.stdout, "no current context")
						return nil
					case *none || len(args) != 1:
						return usagef("want one NAME, or --none")
					}
					if _, ok := c.Contexts[args[0]]; !ok {
						return notFound("context", args[0])
					}
					c.Current = args[0]
					if err := c.save(path); err != nil {
						return err
					}
					fmt.Fprintf(e.stdout, "current context: %s\n", args[0])
					if env := os.Getenv("CLUTCH_CONTEXT"); env != "" && env != args[0] {
						fmt.Fprintf(e.stderr, "note: $CLUTCH_CONTEXT=%s is set and comes first\n", env)
					}
					return nil
				case "show":
					if len(args) > 1 {
						return usagef("want at most one NAME")
					}
					name := selectedContext(c)
					if len(args) == 1 {
						name = args[0]
					}
					if _, ok := c.Contexts[name]; !ok {
						switch {
						case len(args) == 1:
							return notFound("context", name)
						case name == "":
							return errors.New("no context is selected (clutch context use NAME, or name one)")
						}
						return noContext(name) // $CLUTCH_CONTEXT's
					}
					return contextShow(e, c, path, name, *asJSON)
				default: // rm
					if len(args) != 1 {
						return usagef("want one NAME")
					}
					name := args[0]
					if _, ok := c.Contexts[name]; !ok {
						return notFound("context", name)
					}
					delete(c.Contexts, name)
					wasCurrent := c.Current == name
					if wasCurrent {
						c.Current = ""
					}
					if err := c.save(path); err != nil {
						return err
					}
					fmt.Fprintf(e.stdout, "removed context %s", name)
					if wasCurrent {
						fmt.Fprint(e.stdout, "; no context is current now")
					}
					fmt.Fprintln(e.stdout)
					return nil
				}
			}
		},
	})
}

// selectedContext is the context a command uses without --context.
func selectedContext(c *config) string {
	if n := os.Getenv("CLUTCH_CONTEXT"); n != "" {
		return n
	}
	return c.Current
}

func contextAdd(e *env, c *config, path, name string, ce contextEntry, force, use bool) error {
	if !contextName.MatchString(name) {
		return usagef("context name %q: want letters, digits, _ . - (at most 64, not starting with . or -)", name)
	}
	if ce.URL == "" && ce.DB == "" {
		return usagef("want --url URL or --db FILE (or both)")
	}
	n := 0
	for _, s := range []string{ce.KeyFile, ce.KeyEnv, ce.Key} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return usagef("at most one of --key-file, --key-env and --key")
	}
	if _, exists := c.Contexts[name]; exists && !force {
		return fmt.Errorf("context %q exists (--force replaces it)", name)
	}
	// Paths are kept absolute: a context is used from any folder.
	for _, p := range []*string{&ce.DB, &ce.KeyFile} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	if ce.KeyFile != "" {
		if _, err := ce.key(name); err != nil {
			return err
		}
	}
	if err := ce.check(name); err != nil {
		return usagef("%v", err)
	}
	c.Contexts[name] = ce
	if use {
		c.Current = name
	}
	if err := c.save(path); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "saved context %s in %s", name, path)
	if use {
		fmt.Fprint(e.stdout, "; it is current")
	}
	fmt.Fprintln(e.stdout)
	if ce.Key != "" {
		fmt.Fprintln(e.stderr, "note: the key is stored in the config file (owner-only); --key-file or --key-env keep it out of the file and of the command line")
	}
	return nil
}

func (c *config) describe(name string, selected bool) contextJSON {
	ce := c.Contexts[name]
	return contextJSON{Name: name, Selected: selected, Description: ce.Description, URL: ce.URL, DB: ce.DB, KeyFile: ce.KeyFile, KeyEnv: ce.KeyEnv, KeyStored: ce.Key != ""}
}

func contextList(e *env, c *config, namesOnly, asJSON bool) error {
	sel := selectedContext(c)
	names := c.names()
	switch {
	case namesOnly:
		for _, n := range names {
			fmt.Fprintln(e.stdout, n)
		}
		return nil
	case asJSON:
		list := make([]contextJSON, 0, len(names))
		for _, n := range names {
			list = append(list, c.describe(n, n == sel))
		}
		return writeContextJSON(e.stdout, list)
	case len(names) == 0:
		fmt.Fprintln(e.stdout, "(no contexts)")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tWHERE\tKEY\tDESCRIPTION")
	for _, n := range names {
		ce := c.Contexts[n]
		mark := " "
		if n == sel {
			mark = "*"
		}
		where := ce.URL
		if where == "" {
			where = ce.DB
		} else if ce.DB != "" {
			where += " (db " + ce.DB + ")"
		}
		key := "-"
		switch {
		case ce.Key != "":
			key = "in the config"
		case ce.KeyEnv != "":
			key = "$" + ce.KeyEnv
		case ce.KeyFile != "":
			key = "file " + ce.KeyFile
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\n", mark, n, where, key, oneLine(ce.Description))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, ok := c.Contexts[sel]; sel != "" && !ok {
		fmt.Fprintf(e.stderr, "note: $CLUTCH_CONTEXT names %q, which is not a context\n", sel)
	}
	return nil
}

// contextShow prints the context name, which exists.
func contextShow(e *env, c *config, path, name string, asJSON bool) error {
	ce := c.Contexts[name]
	sel := selectedContext(c)
	if asJSON {
		return writeContextJSON(e.stdout, c.describe(name, name == sel))
	}
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	yes := "no"
	if name == sel {
		yes = "yes"
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "name:\t%s\n", name)
	fmt.Fprintf(tw, "description:\t%s\n", dash(oneLine(ce.Description)))
	fmt.Fprintf(tw, "url:\t%s\n", dash(ce.URL))
	fmt.Fprintf(tw, "db:\t%s\n", dash(ce.DB))
	fmt.Fprintf(tw, "key:\t%s\n", ce.keySource())
	fmt.Fprintf(tw, "selected:\t%s\n", yes)
	fmt.Fprintf(tw, "config:\t%s\n", path)
	return tw.Flush()
}

// writeContextJSON prints v indented, angle brackets as they are.
func writeContextJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
