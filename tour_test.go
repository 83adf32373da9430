package clutch_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestTourCoversEveryPackage fails when a public package of the module is
// missing from the tour in doc.go, so a new package gets a place on the map.
func TestTourCoversEveryPackage(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH: cannot list the module's packages")
	}
	out, err := exec.Command(gobin, "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/clutchprotocol/clutch"
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == module || strings.Contains(pkg, "/internal") || pkg == module+"/examples" || strings.HasPrefix(pkg, module+"/examples/") {
			continue
		}
		if !strings.Contains(string(doc), "["+pkg+"]") {
			t.Errorf("doc.go's tour does not name %s (as a [%s] link)", pkg, pkg)
		}
	}
}
