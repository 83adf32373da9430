package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// completionScript writes clutch's completion script for shell to a file.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	out, _ := mustClutch(t, exitOK, "completion", shell)
	path := filepath.Join(t.TempDir(), "clutch."+shell)
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// withFakeCommand registers a command for the duration of a test, to show
// that the scripts cover commands they were not written for.
func withFakeCommand(t *testing.T) {
	t.Helper()
	register(&command{
		name: "zzfake", summary: "a command added later", usage: "clutch zzfake on|off [flags]",
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			fs.String("frobnicate", "", "a flag added later")
			fs.Bool("quietly", false, "a switch")
			return func(context.Context, *env, []string) error { return nil }
		},
	})
	t.Cleanup(func() { delete(commands, "zzfake") })
}

// A stand-in for the clutch binary in the shells: what the scripts run to
// list the contexts.
const fakeContexts = "prod\nstaging\n"

func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	withFakeCommand(t)
	path := completionScript(t, "bash")
	if out, err := exec.Command(bash, "-n", path).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	// Each case is the words on the line, the last one being completed.
	cases := []struct {
		words []string
		want  string // COMPREPLY, one a line
	}{
		{[]string{"clutch", "ta"}, "tail"},
		{[]string{"clutch", "tail", "--ru"}, "--run"},
		{[]string{"clutch", "tail", "-ru"}, ""}, // completes the -- spelling only
		{[]string{"clutch", "co"}, "compact\ncompletion\ncontext"},
		{[]string{"clutch", "ver"}, "verify\nversion"},
		{[]string{"clutch", "he"}, "help"},
		{[]string{"clutch", "help", "st"}, "stats"},
		{[]string{"clutch", "completion", ""}, "bash\nzsh\nfish"},
		{[]string{"clutch", "rules", "--author", "x", "ap"}, "approve"},
		{[]string{"clutch", "rules", "list", ""}, ""}, // a subcommand given: files
		{[]string{"clutch", "tail", "--context", ""}, "prod\nstaging"},
		{[]string{"clutch", "runs", "-context", "st"}, "staging"},
		{[]string{"clutch", "context", "use", ""}, "prod\nstaging"},
		{[]string{"clutch", "context", "--json", "show", "p"}, "prod"},
		{[]string{"clutch", "context", "add", ""}, ""}, // a new name
		{[]string{"clutch", "tail", "--db", ""}, ""},   // a value: files
		{[]string{"clutch", "version", "--j"}, "--json"},
		{[]string{"clutch", "zz"}, "zzfake"},
		{[]string{"clutch", "zzfake", "--fr"}, "--frobnicate"},
		{[]string{"clutch", "zzfake", "--quietly", ""}, "on\noff"},
		{[]string{"clutch", "zzfake", "--frobnicate", "x", ""}, "on\noff"},
	}
	var prog strings.Builder
	prog.WriteString("source " + path + "\n")
	prog.WriteString("clutch() { [[ \"$*\" == 'context ls --names' ]] && printf '" + strings.ReplaceAll(fakeContexts, "\n", `\n`) + "'; }\n")
	for _, c := range cases {
		prog.WriteString("COMP_WORDS=(")
		for _, w := range c.words {
			prog.WriteString(" '" + w + "'")
		}
		prog.WriteString(" ); COMP_CWORD=" + itoa(len(c.words)-1) + "; _clutch; printf '%s\\n' \"${COMPREPLY[@]}\"; echo ---\n")
	}
	out, err := exec.Command(bash, "--norc", "--noprofile", "-c", prog.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	got := strings.Split(string(out), "---\n")
	for i, c := range cases {
		if strings.TrimSpace(got[i]) != c.want {
			t.Errorf("%q: COMPREPLY %q, want %q", c.words, strings.TrimSpace(got[i]), c.want)
		}
	}
	// Loaded, it is the completion of clutch.
	out, err = exec.Command(bash, "--norc", "--noprofile", "-c", "source "+path+"; complete -p clutch").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "complete -o default -F _clutch clutch" {
		t.Fatalf("complete -p clutch: %v %s", err, out)
	}
}

func TestCompletionZsh(t *testing.T) {
	zsh := needShell(t, "zsh")
	path := completionScript(t, "zsh")
	if out, err := exec.Command(zsh, "-n", path).CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v\n%s", err, out)
	}
	data, _ := os.ReadFile(path)
	for _, s := range []string{"#compdef clutch", "'tail:print the latest events", "'--run:only events of this run_id (exit 3 when it has none)'", "context ls --names"} {
		if !strings.Contains(string(data), s) {
			t.Errorf("the zsh script lacks %q", s)
		}
	}
}

func TestCompletionFish(t *testing.T) {
	fish := needShell(t, "fish")
	withFakeCommand(t)
	path := completionScript(t, "fish")
	if out, err := exec.Command(fish, "--no-config", "-n", path).CombinedOutput(); err != nil {
		t.Fatalf("fish -n: %v\n%s", err, out)
	}
	// fish completes a line on request: complete -C.
	cases := []struct{ line, want string }{
		{"clutch ta", "tail"},
		{"clutch tail --ru", "--run"},
		{"clutch completion ", "bash fish zsh"},
		{"clutch rules --author x ap", "approve"},
		{"clutch tail --context ", "prod staging"},
		{"clutch context use ", "prod staging"},
		{"clutch help ver", "verify version"},
		{"clutch zzfake --fr", "--frobnicate"},
		{"clutch zzfake --frobnicate x o", "off on"},
	}
	var prog strings.Builder
	prog.WriteString("source " + path + "\n")
	prog.WriteString("function clutch; if test \"$argv\" = 'context ls --names'; printf '" + strings.ReplaceAll(fakeContexts, "\n", `\n`) + "'; end; end\n")
	for _, c := range cases {
		prog.WriteString("complete -C '" + c.line + "' | string replace -r '\\t.*' '' | string join ' '; echo ---\n")
	}
	out, err := exec.Command(fish, "--no-config", "-c", prog.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("fish: %v\n%s", err, out)
	}
	got := strings.Split(string(out), "---\n")
	for i, c := range cases {
		if strings.TrimSpace(got[i]) != c.want {
			t.Errorf("%q: %q, want %q", c.line, strings.TrimSpace(got[i]), c.want)
		}
	}
}

func TestCompletionUsage(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		if code, out, errs := clutch(t, args...); code != exitUsage || out != "" || !strings.Contains(errs, "bash, zsh or fish") {
			t.Errorf("clutch %q: %d %q %q", args, code, out, errs)
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if out, _ := mustClutch(t, exitOK, args...); out != "clutch "+version()+"\n" {
			t.Errorf("clutch %q: %q", args, out)
		}
	}
	out, _ := mustClutch(t, exitOK, "version", "--json")
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil || v["version"] != version() || v["go"] != runtime.Version() {
		t.Fatalf("version --json: %v %s", err, out)
	}
	mustClutch(t, exitUsage, "version", "extra")
	// What a build from a checkout records.
	bi := &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v0.4.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "72ff497abc"}, {Key: "vcs.modified", Value: "true"},
	}}
	if got := versionOf(bi, true); got != (versionInfo{Version: "v0.4.0", Go: "go1.26.1", Commit: "72ff497abc", Modified: true}) {
		t.Fatalf("versionOf: %+v", got)
	}
	bi.Settings, bi.Main.Version = nil, ""
	if got := versionOf(bi, true); got != (versionInfo{Version: "(devel)", Go: "go1.26.1"}) {
		t.Fatalf("versionOf without VCS: %+v", got)
	}
	if b, _ := json.Marshal(versionOf(bi, true)); string(b) != `{"version":"(devel)","go":"go1.26.1"}` {
		t.Fatalf("version --json without a commit: %s", b)
	}

	out, _ = mustClutch(t, exitOK, "help")
	for _, name := range []string{"version", "help", "completion", "context"} {
		if !strings.Contains(out, "\n  "+name+" ") {
			t.Errorf("the help does not list %s:\n%s", name, out)
		}
	}
	if !strings.Contains(out, "a named context (--context\nNAME, else $CLUTCH_CONTEXT, else the current one") {
		t.Errorf("the help does not say where values come from:\n%s", out)
	}
	if out, _ := mustClutch(t, exitOK, "help", "version"); !strings.Contains(out, "Usage: clutch version [--json]") {
		t.Errorf("help version:\n%s", out)
	}
}

// needShell returns the path of a shell the completion tests run. make
// deps installs zsh and fish; a missing one fails under CI=true and skips
// otherwise, saying so.
func needShell(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := name + " is not installed (make deps installs it): its completion script is not checked"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
