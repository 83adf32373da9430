package protocol

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoNetHTTP: the envelope package links no HTTP stack; the HTTP status
// of each code lives with the HTTP surfaces (internal/httpjson).
func TestNoNetHTTP(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH, so the dependencies cannot be listed")
	}
	out, err := exec.Command(gotool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "net/http" {
			t.Fatal("package protocol depends on net/http")
		}
	}
}
