package multiagent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/multiagent"
)

type rendering struct {
	Claude string `json:"claude"`
	GPT    struct {
		System string `json:"system"`
		User   string `json:"user"`
	} `json:"gpt"`
	Gemini string `json:"gemini"`
}

func promptInputs(t *testing.T) []string {
	ex, _ := filepath.Glob("testdata/examples/0[1-4]*.json")
	cases, _ := filepath.Glob("testdata/prompt-cases/*.json")
	return append(ex, cases...)
}

func render(t *testing.T, file string) rendering {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := inbound(t, multiagent.New(nil), raw)[0]
	var r rendering
	if r.Claude, err = multiagent.ClaudePrompt(m); err != nil {
		t.Fatal(err)
	}
	if r.GPT.System, r.GPT.User, err = multiagent.GPTPrompt(m); err != nil {
		t.Fatal(err)
	}
	if r.Gemini, err = multiagent.GeminiPrompt(m); err != nil {
		t.Fatal(err)
	}
	return r
}

func compare(t *testing.T, file string, got, want rendering) {
	t.Helper()
	if got.Claude != want.Claude {
		t.Errorf("%s Claude:\n got %q\nwant %q", file, got.Claude, want.Claude)
	}
	if got.GPT != want.GPT {
		t.Errorf("%s GPT:\n got %+v\nwant %+v", file, got.GPT, want.GPT)
	}
	if got.Gemini != want.Gemini {
		t.Errorf("%s Gemini:\n got %q\nwant %q", file, got.Gemini, want.Gemini)
	}
}

// The Go renderings equal what the reference TypeScript functions (testdata/prompts.mjs) print
// (recorded with Node in prompts.golden.jsonl).
func TestPromptsMatchTheReference(t *testing.T) {
	golden, err := os.ReadFile("testdata/prompts.golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	files := promptInputs(t)
	sc := bufio.NewScanner(bytes.NewReader(golden))
	sc.Buffer(nil, 1<<20)
	for i := 0; sc.Scan(); i++ {
		var want rendering
		if err := json.Unmarshal(sc.Bytes(), &want); err != nil {
			t.Fatal(err)
		}
		compare(t, files[i], render(t, files[i]), want)
	}
}

// With Node at hand, check against JavaScript live as well.
func TestPromptsAgainstNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		// The golden file above still checks the renderings.
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed: the live check against the reference JavaScript needs it")
		}
		t.Skip("node is not installed: the live check against the reference JavaScript needs it")
	}
	files := promptInputs(t)
	args := append([]string{"prompts.mjs"}, files...)
	for i := range files {
		args[i+1], _ = filepath.Rel("testdata", files[i])
	}
	cmd := exec.CommandContext(context.Background(), node, args...)
	cmd.Dir = "testdata"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node failed on the reference JavaScript: %v", err)
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	for i, l := range lines {
		var want rendering
		if err := json.Unmarshal(l, &want); err != nil {
			t.Fatal(err)
		}
		compare(t, files[i], render(t, files[i]), want)
	}
}
