package nodepeer

import (
	"os"
	"os/exec"
	"testing"
)

// Need returns the path of node, after checking that each of files (paths
// relative to the test's package directory, e.g. the package.json of an
// installed npm package) exists. what names the peer in the message.
func Need(t testing.TB, what string, files ...string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		Missing(t, what+" needs node, which is not on PATH")
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			Missing(t, what+" is not installed: "+f+" is missing (run `make deps`)")
		}
	}
	return node
}

// Missing fails the test under CI=true and skips it otherwise, with msg.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
