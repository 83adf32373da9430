package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"type": "task.request"`,
		`"payload_type": "research.query.v1"`,
		"verified task.request from agent:ui",
		"tampered copy: BAD_SIGNATURE",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
