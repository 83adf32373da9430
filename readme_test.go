package clutch_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeFirstProgram keeps the README's "A first program" identical to
// examples/first/main.go, which `go test ./examples/first` compiles and runs:
// the program a reader copies from the README is one that works.
func TestReadmeFirstProgram(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := os.ReadFile("examples/first/main.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i := strings.Index(s, "## A first program")
	if i < 0 {
		t.Fatal(`README.md has no "## A first program" section`)
	}
	s = s[i:]
	const open, end = "```go\n", "```\n"
	j := strings.Index(s, open)
	if j < 0 {
		t.Fatal("the first program section has no ```go block")
	}
	s = s[j+len(open):]
	k := strings.Index(s, end)
	if k < 0 {
		t.Fatal("the ```go block of the first program is not closed")
	}
	if got := s[:k]; got != string(prog) {
		t.Errorf("README.md's first program differs from examples/first/main.go; copy the file into the README.\nREADME:\n%s\nfile:\n%s", got, prog)
	}
}
