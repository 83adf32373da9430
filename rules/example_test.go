package rules_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/clutchprotocol/clutch/rules"
	"github.com/clutchprotocol/clutch/store/memstore"
)

func Example() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	defer st.Close()
	lib, _ := rules.Open(ctx, st, &rules.Options{Workspace: "team"})
	doc, _ := lib.Publish(ctx, "agent:lead", rules.Publish{Path: "workflow/CODING.md",
		Content: "# Coding\n\n## Steps\n\n1. Inspect the diff.\n2. Suggest a commit message.\n"})

	s, _ := lib.Session(ctx, "agent:host", "host-session-1")
	items, _ := s.Load(ctx, []string{doc.ID}, map[string]string{doc.ID: doc.Hash}) // already known
	fmt.Println("content sent:", items[0].Content != nil)
	for _, c := range items[0].Constraints {
		fmt.Printf("%s: %s\n", c.ID, c.Text)
	}

	n, _ := s.Refer(ctx, []rules.Ref{{RuleID: doc.ID, ConstraintID: "Steps/2", Reason: "wrote the message"}})
	fmt.Println("refs recorded:", n)

	_, err := s.Refer(ctx, []rules.Ref{{RuleID: doc.ID, ConstraintID: "Step"}})
	var re *rules.ReferError
	if errors.As(err, &re) {
		fmt.Println(re.Code, re.RetryAction)
	}
	// Output:
	// content sent: false
	// Steps: 1. Inspect the diff.
	// 2. Suggest a commit message.
	// Steps/1: Inspect the diff.
	// Steps/2: Suggest a commit message.
	// refs recorded: 1
	// unknown_constraint retry_with_valid_constraint
}

func ExampleParseConstraints() {
	md := "# Review\n\n## Checks\n\n- tests pass\n- docs updated\n\n## Tone\n\nBe kind.\n"
	for _, c := range rules.ParseConstraints(md) {
		fmt.Printf("%-8s %q\n", c.ID, c.Text)
	}
	// Output:
	// Checks   "- tests pass\n- docs updated"
	// Checks/1 "tests pass"
	// Checks/2 "docs updated"
	// Tone     "Be kind."
}

func ExampleDecodeCommand() {
	c, err := rules.DecodeCommand([]byte(`{"resource":"context","op":{"update":{"id":"ctx-123","body":"# New\n"}}}`))
	fmt.Println(c.Resource, c.Op, c.ID, err)
	_, err = rules.DecodeCommand([]byte(`{"resource":"context","op":{}}`))
	fmt.Println(err)
	// Output:
	// context update ctx-123 <nil>
	// invalid artifact command: op must contain exactly one key (create, update, rename, delete or discard), it has 0
}
