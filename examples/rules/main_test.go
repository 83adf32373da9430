package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestRulesTutorial(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, filepath.Join(t.TempDir(), "clutch.db")); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"constraint Checks/1  The tests pass.",
		"review task (careful=true) ended with task.result",
		"x.clutch.rules.refer",
		"review task (careful=false) ended with task.error",
		"VALIDATION: result refused: required rule references are missing: agent:reviewer did not refer to rules/REVIEW.md#Checks/1",
		"memload      changed=false content sent=false constraints=4",
		"memref       error unknown_constraint (retry_with_valid_constraint)",
		"draft by agent:ide: update rules/REVIEW.md",
		"approved: rules/REVIEW.md version 2",
		"x.clutch.rules.drafted",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}
