package router

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoSchemaEngineDependency: a program that uses the router does not link
// the JSON Schema stack (package schema, gojsonschema, invopop/jsonschema and
// the YAML readers): the router validates through the Validator interface.
func TestNoSchemaEngineDependency(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH: cannot list the router's dependencies")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"github.com/clutchprotocol/clutch/schema",
		"github.com/invopop/jsonschema",
		"github.com/xeipuuv/",
		"yaml",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.Contains(pkg, f) {
				t.Errorf("the router depends on %s", pkg)
			}
		}
	}
}
