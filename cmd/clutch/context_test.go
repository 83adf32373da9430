package main

import (
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
)

func init() {
	// The tests never read the config of the person running them: those
	// that use one point $CLUTCH_CONFIG at a folder of their own.
	os.Setenv("CLUTCH_CONFIG", filepath.Join(os.TempDir(), "clutch-tests-have-no-config", "config.json"))
	os.Unsetenv("CLUTCH_CONTEXT")
}

// testConfig points $CLUTCH_CONFIG at a file in a folder that does not
// exist yet, and clears the variables a context stands in for.
func testConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "conf", "config.json")
	t.Setenv("CLUTCH_CONFIG", path)
	for _, v := range []string{"CLUTCH_CONTEXT", "CLUTCH_URL", "CLUTCH_DB", "CLUTCH_API_KEY"} {
		t.Setenv(v, "")
	}
	return path
}

func mustClutch(t *testing.T, want int, args ...string) (string, string) {
	t.Helper()
	code, out, errs := clutch(t, args...)
	if code != want {
		t.Fatalf("clutch %q: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errs)
	}
	return out, errs
}

func TestContextCommands(t *testing.T) {
	path := testConfig(t)
	dir := t.TempDir()

	// Nothing saved yet: an empty list is an answer.
	if out, _ := mustClutch(t, exitOK, "context", "ls"); out != "(no contexts)\n" {
		t.Fatalf("ls of nothing: %q", out)
	}
	if out, _ := mustClutch(t, exitOK, "context", "ls", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("ls --json of nothing: %q", out)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("reading wrote the config file")
	}

	keyFile := filepath.Join(dir, "prod.key")
	if err := os.WriteFile(keyFile, []byte("prod-secret-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustClutch(t, exitOK, "context", "add", "prod", "--url", "https://clutch.example.com", "--key-file", keyFile, "--description", "the <team>'s gateway", "--use")
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("config file: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("config folder: %v; want 0700", err)
	}
	t.Chdir(dir)
	mustClutch(t, exitOK, "context", "add", "local", "--db", "team.db")
	_, errs := mustClutch(t, exitOK, "context", "add", "inline", "--url", "http://127.0.0.1:8080", "--key", "inline-secret-key")
	if !strings.Contains(errs, "--key-file or --key-env") {
		t.Fatalf("a key on the command line says where else it may come from: %q", errs)
	}
	mustClutch(t, exitOK, "context", "add", "env", "--url", "http://127.0.0.1:8080", "--key-env", "ENV_KEY")

	// The file: paths absolute, one key source each, the key only where
	// it was given on the command line.
	data, _ := os.ReadFile(path)
	c, err := parseConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]contextEntry{
		"prod":   {Description: "the <team>'s gateway", URL: "https://clutch.example.com", KeyFile: keyFile},
		"local":  {DB: filepath.Join(dir, "team.db")},
		"inline": {URL: "http://127.0.0.1:8080", Key: "inline-secret-key"},
		"env":    {URL: "http://127.0.0.1:8080", KeyEnv: "ENV_KEY"},
	}
	if c.Current != "prod" || !reflect.DeepEqual(c.Contexts, want) {
		t.Fatalf("saved %+v", c)
	}
	if strings.Contains(string(data), "prod-secret-key") {
		t.Fatal("the key of a key file was copied into the config")
	}

	// Listing and showing never print a key.
	out, _ := mustClutch(t, exitOK, "context", "ls")
	if !strings.Contains(out, "* prod") || !strings.Contains(out, "file "+keyFile) || !strings.Contains(out, "$ENV_KEY") ||
		!strings.Contains(out, "in the config") || !strings.Contains(out, filepath.Join(dir, "team.db")) || strings.Contains(out, "secret") {
		t.Fatalf("ls:\n%s", out)
	}
	if out, _ := mustClutch(t, exitOK, "context", "ls", "--names"); out != "env\ninline\nlocal\nprod\n" {
		t.Fatalf("ls --names: %q", out)
	}
	out, _ = mustClutch(t, exitOK, "context", "ls", "--json")
	var list []contextJSON
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 4 || strings.Contains(out, "secret") || strings.Contains(out, `\u003c`) {
		t.Fatalf("ls --json: %v\n%s", err, out)
	}
	if list[3] != (contextJSON{Name: "prod", Selected: true, Description: "the <team>'s gateway", URL: "https://clutch.example.com", KeyFile: keyFile}) || !list[1].KeyStored {
		t.Fatalf("ls --json: %+v", list)
	}
	out, _ = mustClutch(t, exitOK, "context", "show")
	if !strings.Contains(out, "name:         prod") || !strings.Contains(out, "from the file "+keyFile+" (readable)") ||
		!strings.Contains(out, "selected:     yes") || strings.Contains(out, "secret") {
		t.Fatalf("show:\n%s", out)
	}
	if out, _ := mustClutch(t, exitOK, "context", "show", "env"); !strings.Contains(out, "from $ENV_KEY (not set)") {
		t.Fatalf("show env:\n%s", out)
	}
	t.Setenv("ENV_KEY", "env-secret-key")
	if out, _ := mustClutch(t, exitOK, "context", "show", "env"); !strings.Contains(out, "from $ENV_KEY (set)") || strings.Contains(out, "secret") {
		t.Fatalf("show env:\n%s", out)
	}
	if out, _ := mustClutch(t, exitOK, "context", "show", "inline", "--json"); !strings.Contains(out, `"key_stored": true`) || strings.Contains(out, "secret") {
		t.Fatalf("show --json:\n%s", out)
	}

	// use, $CLUTCH_CONTEXT, rm.
	mustClutch(t, exitOK, "context", "use", "local")
	if out, _ := mustClutch(t, exitOK, "context", "show"); !strings.Contains(out, "name:         local") {
		t.Fatalf("show after use local:\n%s", out)
	}
	t.Setenv("CLUTCH_CONTEXT", "env")
	if out, _ := mustClutch(t, exitOK, "context", "ls"); !strings.Contains(out, "* env") || strings.Contains(out, "* local") {
		t.Fatalf("$CLUTCH_CONTEXT marks the one commands use:\n%s", out)
	}
	t.Setenv("CLUTCH_CONTEXT", "")
	if out, _ := mustClutch(t, exitOK, "context", "rm", "local"); !strings.Contains(out, "no context is current now") {
		t.Fatalf("rm of the current context: %q", out)
	}
	if _, errs := mustClutch(t, exitFailure, "context", "show"); !strings.Contains(errs, "no context is selected") {
		t.Fatalf("show with none selected: %q", errs)
	}
	t.Setenv("CLUTCH_CONTEXT", "gone")
	if _, errs := mustClutch(t, exitFailure, "context", "show"); errs != "clutch context: context \"gone\" not found (clutch context ls lists them)\n" {
		t.Fatalf("show with $CLUTCH_CONTEXT naming no context: %q", errs)
	}
	t.Setenv("CLUTCH_CONTEXT", "")
	mustClutch(t, exitOK, "context", "use", "prod")
	mustClutch(t, exitOK, "context", "use", "--none")
	if c, _ := loadConfig(path); c.Current != "" || len(c.Contexts) != 3 {
		t.Fatalf("after use --none: %+v", c)
	}

	// What is refused, and how.
	for _, tc := range []struct {
		args []string
		code int
		in   string
	}{
		{[]string{"context"}, exitUsage, "want a subcommand"},
		{[]string{"context", "list"}, exitUsage, `unknown subcommand "list"`},
		{[]string{"context", "ls", "--url", "http://x"}, exitUsage, "--url is not a flag of context ls"},
		{[]string{"context", "add", "prod", "--url", "http://x"}, exitFailure, `context "prod" exists (--force replaces it)`},
		{[]string{"context", "add", "two words", "--url", "http://x"}, exitUsage, `context name "two words"`},
		{[]string{"context", "add", "x"}, exitUsage, "want --url URL or --db FILE"},
		{[]string{"context", "add", "x", "--url", "ftp://x"}, exitUsage, "invalid gateway URL"},
		{[]string{"context", "add", "x", "--url", "http://x", "--key", "k", "--key-env", "K"}, exitUsage, "at most one of"},
		{[]string{"context", "add", "x", "--url", "http://x", "--key-env", "NOT A NAME"}, exitUsage, "is not a variable name"},
		{[]string{"context", "add", "x", "--url", "http://x", "--key-file", "missing.key"}, exitFailure, `context "x": key file ` + filepath.Join(dir, "missing.key") + ": no such file"},
		{[]string{"context", "use", "nope"}, exitNotFound, `clutch context: context "nope" not found`},
		{[]string{"context", "show", "nope"}, exitNotFound, `clutch context: context "nope" not found`},
		{[]string{"context", "rm", "nope"}, exitNotFound, `clutch context: context "nope" not found`},
		{[]string{"context", "use"}, exitUsage, "want one NAME, or --none"},
	} {
		code, out, errs := clutch(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.in) || out != "" {
			t.Errorf("clutch %q: exit %d, want %d with %q\nstdout: %s\nstderr: %s", tc.args, code, tc.code, tc.in, out, errs)
		}
	}
	mustClutch(t, exitOK, "context", "add", "prod", "--url", "http://127.0.0.1:9", "--force")
	if c, _ := loadConfig(path); c.Contexts["prod"] != (contextEntry{URL: "http://127.0.0.1:9"}) {
		t.Fatalf("--force replaces: %+v", c.Contexts["prod"])
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp-*")); len(matches) != 0 {
		t.Fatalf("temporary files left: %v", matches)
	}
}

// resolvedWhere parses args as a command with addWhere would and applies the
// context: the url, key and db the command then uses.
func resolvedWhere(t *testing.T, args ...string) (*where, error) {
	t.Helper()
	fs := flag.NewFlagSet("clutch runs", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	w := addWhere(fs)
	if _, err := parseInterspersed(fs, args); err != nil {
		t.Fatal(err)
	}
	return w, applyContext(fs)
}

// flag > variable > --context or $CLUTCH_CONTEXT > current > clutch.db.
func TestContextPrecedence(t *testing.T) {
	path := testConfig(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "prod.key")
	os.WriteFile(keyFile, []byte("  file-key\n"), 0o600)
	c := &config{Current: "prod", Contexts: map[string]contextEntry{
		"prod":     {URL: "http://prod.example:8080", KeyFile: keyFile, DB: "/ctx/prod.db"},
		"local":    {DB: "/ctx/local.db"},
		"envkey":   {URL: "http://env.example:8080", KeyEnv: "TEST_CTX_KEY"},
		"gone":     {URL: "http://gone.example:8080", KeyFile: filepath.Join(dir, "gone.key")},
		"keyless":  {URL: "http://keyless.example:8080"},
		"emptykey": {URL: "http://empty.example:8080", KeyFile: filepath.Join(dir, "empty.key")},
	}}
	os.WriteFile(filepath.Join(dir, "empty.key"), []byte("\n"), 0o600)
	if err := c.save(path); err != nil {
		t.Fatal(err)
	}
	type want struct{ url, key, db string }
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want want
		err  string
	}{
		{"the current context", nil, nil, want{"http://prod.example:8080", "file-key", "/ctx/prod.db"}, ""},
		{"a flag beats the context, value by value", nil, []string{"--url", "http://flag:1"}, want{"http://flag:1", "file-key", "/ctx/prod.db"}, ""},
		{"a variable beats the context", map[string]string{"CLUTCH_URL": "http://env:1", "CLUTCH_API_KEY": "env-key"}, nil, want{"http://env:1", "", "/ctx/prod.db"}, ""},
		{"--key beats the context", nil, []string{"--key", "flag-key"}, want{"http://prod.example:8080", "flag-key", "/ctx/prod.db"}, ""},
		{"--db means the file", nil, []string{"--db", "mine.db"}, want{"", "", "mine.db"}, ""},
		{`--url "" reads the context's file`, nil, []string{"--url="}, want{"", "", "/ctx/prod.db"}, ""},
		{"$CLUTCH_DB means the file", map[string]string{"CLUTCH_DB": "env.db"}, nil, want{"", "", "env.db"}, ""},
		{"--context beats the current", nil, []string{"--context", "local"}, want{"", "", "/ctx/local.db"}, ""},
		{"$CLUTCH_CONTEXT beats the current", map[string]string{"CLUTCH_CONTEXT": "local"}, nil, want{"", "", "/ctx/local.db"}, ""},
		{"--context beats $CLUTCH_CONTEXT", map[string]string{"CLUTCH_CONTEXT": "local"}, []string{"--context=keyless"}, want{"http://keyless.example:8080", "", "clutch.db"}, ""},
		{"a key from a variable the context names", map[string]string{"TEST_CTX_KEY": "var-key"}, []string{"--context", "envkey"}, want{"http://env.example:8080", "var-key", "clutch.db"}, ""},
		{"an unknown context", nil, []string{"--context", "nope"}, want{}, `context "nope" not found (clutch context ls lists them)`},
		{"an unknown $CLUTCH_CONTEXT", map[string]string{"CLUTCH_CONTEXT": "nope"}, []string{"--db", "x.db"}, want{}, `context "nope" not found (clutch context ls lists them)`},
		{"an unset key variable", nil, []string{"--context", "envkey"}, want{}, `context "envkey": $TEST_CTX_KEY is not set`},
		{"a missing key file", nil, []string{"--context", "gone"}, want{}, `context "gone": key file ` + filepath.Join(dir, "gone.key") + ": no such file or directory"},
		{"an empty key file", nil, []string{"--context", "emptykey"}, want{}, `context "emptykey": key file ` + filepath.Join(dir, "empty.key") + " is empty"},
		{"no key needed for a file", nil, []string{"--context", "gone", "--db", "x.db"}, want{"", "", "x.db"}, ""},
		{"the key given, the file not read", nil, []string{"--context", "gone", "--key", "k"}, want{"http://gone.example:8080", "k", "clutch.db"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			w, err := resolvedWhere(t, tc.args...)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := (want{w.url, w.key, w.db}); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}

	// The errors match their sentinels and codes.
	_, err := resolvedWhere(t, "--context", "nope")
	if !errors.Is(err, errNoContext) || protocol.CodeOf(err) != protocol.CodeNotFound {
		t.Fatalf("unknown context: %v", err)
	}
	_, err = resolvedWhere(t, "--context", "gone")
	if !errors.Is(err, errContextKey) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing key file: %v", err)
	}

	// No current context, no variable: the defaults.
	c.Current = ""
	c.save(path)
	if w, err := resolvedWhere(t); err != nil || w.url != "" || w.key != "" || w.db != "clutch.db" {
		t.Fatalf("no context: %+v %v", w, err)
	}
	// No config file at all.
	os.Remove(path)
	if w, err := resolvedWhere(t); err != nil || w.url != "" || w.db != "clutch.db" {
		t.Fatalf("no config: %+v %v", w, err)
	}
}

// A command reached through a context answers as with --url and --key, or
// --db, typed out.
func TestContextReachesGatewayAndFile(t *testing.T) {
	s := newServed(t)
	s.rounds(t, 0, 2)
	path := testConfig(t)
	keyFile := filepath.Join(t.TempDir(), "key")
	os.WriteFile(keyFile, []byte(testKey+"\n"), 0o600)
	mustClutch(t, exitOK, "context", "add", "srv", "--url", s.url, "--key-file", keyFile, "--use")

	want, _ := mustClutch(t, exitOK, s.args("runs")...)
	if got, _ := mustClutch(t, exitOK, "runs"); got != want {
		t.Fatalf("runs through the current context:\n%s\nwant:\n%s", got, want)
	}
	want, _ = mustClutch(t, exitOK, s.args("stats", "--json")...)
	if got, _ := mustClutch(t, exitOK, "stats", "--json", "--context", "srv"); got != want {
		t.Fatalf("stats --context:\n%s\nwant:\n%s", got, want)
	}
	// waiting and answer (gateway-only) and rules take it too.
	if _, errs := mustClutch(t, exitOK, "waiting"); errs != "" {
		t.Fatalf("waiting through the context: %s", errs)
	}

	// A key the context cannot read: the error names the context.
	os.Remove(keyFile)
	_, errs := mustClutch(t, exitFailure, "runs")
	if want := `clutch runs: context "srv": key file ` + keyFile + ": no such file or directory\n"; errs != want {
		t.Fatalf("stderr %q, want %q", errs, want)
	}
	// A --context naming no context fails: the source cannot be chosen
	// (exit 1, not 3, which says that what the command asks about is not
	// there).
	if _, errs := mustClutch(t, exitFailure, "runs", "--context", "nope"); errs != "clutch runs: context \"nope\" not found (clutch context ls lists them)\n" {
		t.Fatalf("an unknown --context: %q", errs)
	}
	// A file context.
	file, _, _ := demoFile(t, 2)
	mustClutch(t, exitOK, "context", "add", "file", "--db", file)
	want, _ = mustClutch(t, exitOK, "tail", "--db", file)
	if got, _ := mustClutch(t, exitOK, "tail", "--context", "file"); got != want {
		t.Fatalf("tail --context file:\n%s\nwant:\n%s", got, want)
	}
	_ = path
}

func TestConfigErrors(t *testing.T) {
	path := testConfig(t)
	os.MkdirAll(filepath.Dir(path), 0o700)
	for _, tc := range []struct{ file, want string }{
		{`{"contexts":{"a":{"url":"http://x"}}`, "invalid JSON at byte"},
		{`{"contexts":{"a":{"url":"http://x","bogus":1}}}`, "an unknown field at /contexts/a/bogus"},
		{`{"contexts":{"a":{"url":"http://x"},"a":{"db":"y"}}}`, "a member given twice at /contexts/a"},
		{`{"contexts":{"a":{"url":7}}}`, "a number at /contexts/a/url, want a string"},
		{`{"contexts":[]}`, "an array at /contexts, want an object"},
		{`{"contexts":{"a":{}}}`, `context "a": want a url or a db`},
		{`{"contexts":{"a":{"url":"http://x","key":"k","key_env":"K"}}}`, `context "a": at most one of key_file, key_env and key`},
		{`{"contexts":{"-a":{"url":"http://x"}}}`, `context name "-a"`},
		{`{"current":"b","contexts":{"a":{"db":"x"}}}`, `current context "b" is not in the file`},
		{"{\"contexts\":{\"a\":{\"db\":\"\xff\"}}}", "invalid UTF-8"},
	} {
		os.WriteFile(path, []byte(tc.file), 0o600)
		code, _, errs := clutch(t, "context", "ls")
		if code != exitFailure || !strings.Contains(errs, "clutch context: invalid config file: "+path+": "+tc.want) ||
			strings.Contains(errs, "contextEntry") || strings.Contains(errs, "Go ") || strings.Count(errs, "invalid config file") != 1 {
			t.Errorf("%s: exit %d\n%s", tc.file, code, errs)
		}
		// Every command that reads a context says so too.
		if code, _, errs := clutch(t, "runs"); code != exitFailure || !strings.Contains(errs, tc.want) {
			t.Errorf("runs with %s: exit %d\n%s", tc.file, code, errs)
		}
	}
}

// Any input: an error or a config that saves and loads back the same.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"contexts":{}}`,
		`{"current":"prod","contexts":{"prod":{"url":"https://x.example","key_file":"/k","description":"d"},"l":{"db":"/a.db"}}}`,
		`{"contexts":{"e":{"url":"http://h:1","key_env":"K","db":"x"}}}`,
		`{"contexts":{"a":{"url":"http://x"},"a":{"db":"y"}}}`,
		`{"contexts":{"a":{"url":7}}}`,
		`[]`,
		`{"contexts":{"a":{"key":"\u003c"}}}`,
	} {
		f.Add([]byte(s))
	}
	path := filepath.Join(f.TempDir(), "config.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseConfig(data)
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "Go ") || strings.Contains(msg, "main.") {
				t.Fatalf("a Go type in %q", msg)
			}
			return
		}
		if err := c.save(path); err != nil {
			t.Fatal(err)
		}
		back, err := loadConfig(path)
		if err != nil {
			t.Fatalf("a saved config does not load: %v", err)
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("round trip: %+v, want %+v", back, c)
		}
	})
}

// clutch context saves a gateway or a file under a name; every command
// with --url takes --context NAME.
func Example_context() {
	dir, _ := os.MkdirTemp("", "clutch")
	defer os.RemoveAll(dir)
	os.Setenv("CLUTCH_CONFIG", filepath.Join(dir, "config.json"))
	defer os.Setenv("CLUTCH_CONFIG", filepath.Join(os.TempDir(), "clutch-tests-have-no-config", "config.json"))
	db := exampleFile(dir)

	run([]string{"context", "add", "team", "--db", db, "--description", "the example store", "--use"}, io.Discard, os.Stderr)
	run([]string{"context", "ls", "--names"}, os.Stdout, os.Stderr)
	run([]string{"tail", "--type", "task.result"}, os.Stdout, os.Stderr) // reads the context's file
	// Output:
	// team
	// 2      08:00:00.000  task.result      agent:ken              task_1 {"answer":"large"}
}
