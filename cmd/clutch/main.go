package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runContext(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitNotFound = 3 // what the command line names does not exist (notfound.go)
)

// run runs the command line args (without the program name) and returns
// the exit code. It is main without the process: tests call it.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, os.Stdin, stdout, stderr)
}

// env is what a command reads and writes.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// command is one subcommand.
type command struct {
	name     string
	summary  string // one line for the command list
	usage    string // "clutch name [flags] ARGS"
	help     string // what it does, after the usage line
	examples string
	flags    func(fs *flag.FlagSet) func(ctx context.Context, e *env, args []string) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// usageError is a wrong command line: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

func runContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		mainHelp(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				commandHelp(stdout, c, nil)
				return exitOK
			}
		}
		mainHelp(stdout)
		return exitOK
	case "--version":
		name = "version"
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "clutch: unknown command %q\n\n", name)
		mainHelp(stderr)
		return exitUsage
	}
	fs := flag.NewFlagSet("clutch "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	do := c.flags(fs)
	pos, err := parseInterspersed(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		commandHelp(stdout, c, fs)
		return exitOK
	}
	if err == nil {
		err = applyContext(fs) // --context: the named context's url, key, db
	}
	if err == nil {
		err = do(ctx, e, pos)
	}
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "clutch %s: %v\nRun 'clutch %s --help' for usage.\n", name, err, name)
		return exitUsage
	case parseFailed(err):
		fmt.Fprintf(stderr, "clutch %s: %v\nRun 'clutch %s --help' for usage.\n", name, err, name)
		return exitUsage
	case errors.Is(err, errFailed):
		return exitFailure // the command said why already
	case isNotFound(err):
		fmt.Fprintf(stderr, "clutch %s: %v\n", name, err)
		return exitNotFound
	default:
		fmt.Fprintf(stderr, "clutch %s: %v\n", name, err)
		return exitFailure
	}
}

// errFailed ends a command that has reported its failure itself.
var errFailed = errors.New("failed")

type parseError struct{ error }

func parseFailed(err error) bool {
	var pe parseError
	return errors.As(err, &pe)
}

// parseInterspersed parses flags that may come before, between or after
// the positional arguments (clutch tree run_1 --json).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, parseError{err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func mainHelp(w io.Writer) {
	fmt.Fprint(w, `clutch inspects, tails, exports and serves Clutch event stores.

Usage:
  clutch <command> [flags] [arguments]

Commands:
`)
	names := commandNames()
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		summary := "a command's flags and examples (= clutch COMMAND --help)"
		if c, ok := commands[n]; ok {
			summary = c.summary
		}
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, summary)
	}
	fmt.Fprint(w, `
Where to read: a command's flag (--db, --url, --key), else its variable
($CLUTCH_DB, $CLUTCH_URL, $CLUTCH_API_KEY), else a named context (--context
NAME, else $CLUTCH_CONTEXT, else the current one: see clutch context), else
clutch.db.

The read commands (runs, tail, tree, replay, export, stats, verify, check,
agents, get) read either a store file (--db), opened read-only so that
several readers may share it, or a running gateway (--url with --key) when a
process holds the file. submit, cancel, retry, waiting and answer act through
a gateway; serve, import, restore, compact and prune write a file, and backup copies one;
rules approve, reject and import write the file, or go through the gateway.

Exit codes: 0 ok (an empty result too), 1 failure (said on stderr), 2 usage,
3 not found (a run, thread, task or other id named on the command line does
not exist, or the caller may not see it). A file and a gateway give the same
answer and exit code to the same question.
Run 'clutch <command> --help' for a command's flags and examples.
`)
}

func commandHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	if fs == nil {
		fs = flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.flags(fs)
	}
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", c.usage, strings.TrimSpace(c.help))
	fmt.Fprint(w, "\nFlags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	if c.examples != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(c.examples, "\n"))
	}
}

// commandNames are the names mainHelp and the completion scripts list:
// the registered commands and help, sorted.
func commandNames() []string {
	names := make([]string, 0, len(commands)+1)
	for n := range commands {
		names = append(names, n)
	}
	names = append(names, "help")
	sort.Strings(names)
	return names
}

func init() {
	register(&command{
		name:    "version",
		summary: "print the version of clutch (--json: with the Go version and commit)",
		usage:   "clutch version [--json]",
		help: `Prints the module version clutch was built from ("(devel)" for a build from a
checkout). --json prints {"version", "go", "commit"}: commit is the VCS
revision the binary was built from, when the build recorded it, and
"modified": true follows it when the checkout had local changes.`,
		examples: `  clutch version
  clutch version --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, "print JSON")
			return func(_ context.Context, e *env, args []string) error {
				if len(args) != 0 {
					return usagef("version takes no argument")
				}
				if !*asJSON {
					fmt.Fprintln(e.stdout, "clutch", version())
					return nil
				}
				enc := json.NewEncoder(e.stdout)
				enc.SetEscapeHTML(false)
				return enc.Encode(buildInfo())
			}
		},
	})
}

// versionInfo is what version --json prints.
type versionInfo struct {
	Version  string `json:"version"`
	Go       string `json:"go"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

func buildInfo() versionInfo { return versionOf(debug.ReadBuildInfo()) }

// versionOf reads a binary's build info: its module version, the Go
// version it was built with, and the VCS revision when the build recorded
// one.
func versionOf(bi *debug.BuildInfo, ok bool) versionInfo {
	v := versionInfo{Version: "(devel)", Go: runtime.Version()}
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	if v.Commit == "" {
		v.Modified = false
	}
	return v
}

// version is the module version clutch was built from, or "(devel)".
func version() string { return buildInfo().Version }
