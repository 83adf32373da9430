package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/gateway"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/rules"
	"github.com/clutchprotocol/clutch/rules/rulesapi"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

const (
	reviewMD = "# Review\n\n## Checks\n\n- tests pass\n"
	setupMD  = "# Setup\n\n## Install\n\n- make deps\n"
)

// rulesFixture fills a library (workspace "team") in st: a rule and a
// context document published by agent:lead; agent:host and agent:other
// both drafted an update of the rule; agent:host drafted a new context
// document (the returned tmp id).
func rulesFixture(t *testing.T, st store.Store) (rule rules.Document, created string) {
	t.Helper()
	ctx := context.Background()
	lib, err := rules.Open(ctx, st, &rules.Options{Workspace: "team"})
	if err != nil {
		t.Fatal(err)
	}
	if rule, err = lib.Publish(ctx, "agent:lead", rules.Publish{Path: "rules/REVIEW.md", Content: reviewMD, Description: "review checks"}); err != nil {
		t.Fatal(err)
	}
	if _, err = lib.Publish(ctx, "agent:lead", rules.Publish{Path: "context/SETUP.md", Content: setupMD}); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"agent:host", "agent:other"} {
		s, err := lib.Session(ctx, a, "s")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Artifact(ctx, rules.Command{Resource: "rule", Op: "update", ID: rule.ID, Body: reviewMD + "- by " + a + "\n"}); err != nil {
			t.Fatal(err)
		}
		if a == "agent:host" {
			res, err := s.Artifact(ctx, rules.Command{Resource: "context", Op: "create", Path: "context/NEW.md", Body: "# New\n"})
			if err != nil {
				t.Fatal(err)
			}
			created = res.ID
		}
	}
	return rule, created
}

// rulesFile makes a closed store file holding rulesFixture.
func rulesFile(t *testing.T) (path string, rule rules.Document, created string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "events.db")
	st, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	rule, created = rulesFixture(t, st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return path, rule, created
}

// libraryEvents reads the file's library events of type typ.
func libraryEvents(t *testing.T, path string, typ protocol.Type) []map[string]any {
	t.Helper()
	st, err := boltstore.Open(path, &boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out []map[string]any
	for ev, err := range st.Read(context.Background(), store.Query{TypePrefix: string(typ)}) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ev.Message()
		var p map[string]any
		json.Unmarshal(m.Payload, &p)
		p["_from"] = m.From.AgentID
		out = append(out, p)
	}
	return out
}

func TestRulesFile(t *testing.T) {
	db, rule, created := rulesFile(t)
	w := func(args ...string) []string { return append(args, "--db", db, "--workspace", "team") }

	code, out, errs := clutch(t, w("rules", "list")...)
	if code != exitOK || !strings.Contains(out, rule.ID) || !strings.Contains(out, "rules/REVIEW.md") || !strings.Contains(out, "review checks") {
		t.Fatalf("rules list: %d\n%s%s", code, out, errs)
	}
	code, out, _ = clutch(t, w("rules", "drafts")...)
	if code != exitOK || strings.Count(out, rule.ID) != 2 || !strings.Contains(out, created) || !strings.Contains(out, "agent:other") {
		t.Fatalf("rules drafts: %d\n%s", code, out)
	}
	code, out, _ = clutch(t, w("rules", "show", rule.ID)...)
	if code != exitOK || out != reviewMD {
		t.Fatalf("rules show: %d %q", code, out)
	}
	code, out, _ = clutch(t, w("rules", "show", "--draft", rule.ID, "--author", "agent:host")...)
	if code != exitOK || out != reviewMD+"- by agent:host\n" {
		t.Fatalf("rules show --draft: %d %q", code, out)
	}
	code, out, _ = clutch(t, w("rules", "show", "--draft", "--base", created)...)
	if code != exitOK || out != "" {
		t.Fatalf("rules show --draft --base of a create: %d %q", code, out)
	}
	// Two authors drafted the rule: approve needs --author.
	code, _, errs = clutch(t, w("rules", "approve", rule.ID)...)
	if code != exitUsage || !strings.Contains(errs, "--author") || !strings.Contains(errs, "agent:other") {
		t.Fatalf("ambiguous approve: %d %s", code, errs)
	}
	code, _, errs = clutch(t, w("rules", "reject", created)...)
	if code != exitUsage || !strings.Contains(errs, "--reason") {
		t.Fatalf("reject without a reason: %d %s", code, errs)
	}
	code, out, errs = clutch(t, w("rules", "approve", rule.ID, "--author", "agent:host", "--as", "agent:lead")...)
	if code != exitOK || !strings.Contains(out, "published rules/REVIEW.md ("+rule.ID+") version 2") {
		t.Fatalf("approve: %d %s%s", code, out, errs)
	}
	pubs := libraryEvents(t, db, rules.TypePublished)
	if last := pubs[len(pubs)-1]; last["_from"] != "agent:lead" || last["source"] != "review" || last["draft_author"] != "agent:host" {
		t.Fatalf("the published event: %v", last)
	}
	// The other draft was based on version 1: a conflict, shown and refused.
	code, out, _ = clutch(t, w("rules", "drafts")...)
	if code != exitOK || !strings.Contains(out, "conflict") {
		t.Fatalf("drafts after the approval: %d\n%s", code, out)
	}
	code, _, errs = clutch(t, w("rules", "approve", rule.ID)...)
	if code != exitFailure || !strings.Contains(errs, "CONFLICT") {
		t.Fatalf("approve of a stale draft: %d %s", code, errs)
	}
	code, out, errs = clutch(t, w("rules", "reject", rule.ID, "--reason", "stale")...)
	if code != exitOK || !strings.Contains(out, "rejected agent:other's draft") {
		t.Fatalf("reject: %d %s%s", code, out, errs)
	}
	rej := libraryEvents(t, db, rules.TypeDraftRejected)
	if len(rej) != 1 || rej[0]["_from"] != operator || rej[0]["reason"] != "stale" || rej[0]["author"] != "agent:other" {
		t.Fatalf("the rejection: %v", rej)
	}
	code, out, _ = clutch(t, w("rules", "approve", created, "--json")...)
	var ap rulesapi.Approved
	if code != exitOK || json.Unmarshal([]byte(out), &ap) != nil || ap.Document.Path != "context/NEW.md" {
		t.Fatalf("approve of a create: %d %s", code, out)
	}
	code, out, _ = clutch(t, w("rules", "drafts")...)
	if code != exitOK || !strings.Contains(out, "no open drafts") {
		t.Fatalf("drafts at the end: %d %s", code, out)
	}

	// Export, then import into a new file: the same documents, same ids.
	dir := filepath.Join(t.TempDir(), "team-rules")
	code, out, errs = clutch(t, w("rules", "export", dir)...)
	if code != exitOK || !strings.Contains(out, "exported 3 documents") {
		t.Fatalf("export: %d %s%s", code, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "rules", "REVIEW.md")); err != nil || string(b) != reviewMD+"- by agent:host\n" {
		t.Fatalf("exported REVIEW.md: %q %v", b, err)
	}
	db2 := filepath.Join(t.TempDir(), "other.db")
	code, out, errs = clutch(t, "rules", "import", dir, "--db", db2, "--workspace", "team")
	if code != exitOK || !strings.Contains(out, "3 published, 0 unchanged") {
		t.Fatalf("import: %d %s%s", code, out, errs)
	}
	_, want, _ := clutch(t, w("rules", "list", "--json")...)
	_, got, _ := clutch(t, "rules", "list", "--json", "--db", db2, "--workspace", "team")
	var a, b rulesapi.DocumentList
	json.Unmarshal([]byte(want), &a)
	json.Unmarshal([]byte(got), &b)
	if len(a.Documents) != 3 || len(b.Documents) != 3 {
		t.Fatalf("lists: %s\n%s", want, got)
	}
	for i := range a.Documents {
		x, y := a.Documents[i], b.Documents[i]
		if x.ID != y.ID || x.Path != y.Path || x.Hash != y.Hash || x.Kind != y.Kind || x.Description != y.Description {
			t.Fatalf("imported %+v; exported %+v", y, x)
		}
	}
	code, out, _ = clutch(t, "rules", "import", dir, "--db", db2, "--workspace", "team")
	if code != exitOK || !strings.Contains(out, "0 published, 3 unchanged") {
		t.Fatalf("import again: %d %s", code, out)
	}
}

func TestRulesFileUsage(t *testing.T) {
	db, _, _ := rulesFile(t)
	for _, args := range [][]string{
		{"rules"}, {"rules", "nope"}, {"rules", "list", "x"}, {"rules", "show"}, {"rules", "approve", "a", "b"},
		{"rules", "show", "x", "--base"}, {"rules", "list", "--as", "bob"},
	} {
		if code, _, errs := clutch(t, append(args, "--db", db)...); code != exitUsage {
			t.Errorf("%v: exit %d %s", args, code, errs)
		}
	}
	// A missing file is not created by a review.
	missing := filepath.Join(t.TempDir(), "missing.db")
	if code, _, _ := clutch(t, "rules", "approve", "x", "--db", missing); code != exitFailure {
		t.Errorf("approve on a missing file: %d", code)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("approve created the file")
	}
	// A file a process holds: read-only commands say to use --url.
	st, err := boltstore.Open(db, &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	code, _, errs := clutch(t, "rules", "list", "--db", db, "--lock-timeout", "1ms")
	if code != exitFailure || !strings.Contains(errs, "--url") {
		t.Fatalf("list of a held file: %d %s", code, errs)
	}
}

// Through a gateway: the same review, with the key's scopes.
func TestRulesRemote(t *testing.T) {
	ctx := context.Background()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "events.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rule, created := rulesFixture(t, st)
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas, _ := schema.New(nil)
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	lib, err := rules.Open(ctx, st, &rules.Options{Workspace: "team"})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := rulesapi.New(lib, nil)
	const submitKey = "submit-key-0123456789abcdef"
	keys, _ := auth.APIKeys(map[string]auth.Caller{
		testKey:   {AgentID: "agent:reviewer", Scopes: []string{auth.ScopeAdmin}},
		submitKey: {AgentID: "agent:host", Scopes: []string{auth.ScopeSubmit}},
	})
	gw, err := gateway.New(r, &gateway.Options{Auth: keys, Rules: h})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	remote := func(key string, args ...string) []string { return append(args, "--url", srv.URL, "--key", key) }

	code, out, errs := clutch(t, remote(submitKey, "rules", "drafts")...)
	if code != exitOK || strings.Contains(out, "agent:other") || !strings.Contains(out, created) {
		t.Fatalf("drafts as the author: %d %s%s", code, out, errs)
	}
	code, _, errs = clutch(t, remote(submitKey, "rules", "approve", created)...)
	if code != exitFailure || !strings.Contains(errs, "403") {
		t.Fatalf("approve without admin: %d %s", code, errs)
	}
	code, out, errs = clutch(t, remote(testKey, "rules", "approve", rule.ID, "--author", "agent:other")...)
	if code != exitOK || !strings.Contains(out, "version 2") {
		t.Fatalf("approve: %d %s%s", code, out, errs)
	}
	if d, _ := lib.Document(rule.ID); d.Version != 2 {
		t.Fatalf("the library after the approval: %+v", d)
	}
	code, out, errs = clutch(t, remote(testKey, "rules", "reject", created, "--reason", "not needed")...)
	if code != exitOK || !strings.Contains(out, "rejected agent:host's draft "+created) {
		t.Fatalf("reject: %d %s%s", code, out, errs)
	}
	code, out, _ = clutch(t, remote(testKey, "rules", "show", rule.ID)...)
	if code != exitOK || out != reviewMD+"- by agent:other\n" {
		t.Fatalf("show: %d %q", code, out)
	}
	dir := t.TempDir()
	if code, out, errs = clutch(t, remote(submitKey, "rules", "export", dir)...); code != exitOK {
		t.Fatalf("export: %d %s%s", code, out, errs)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules", "STYLE.md"), []byte("## Names\n\n- short\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = clutch(t, remote(testKey, "rules", "import", dir)...)
	if code != exitOK || !strings.Contains(out, "1 published, 2 unchanged") {
		t.Fatalf("import: %d %s%s", code, out, errs)
	}
	if len(lib.Documents()) != 3 {
		t.Fatalf("documents after the import: %v", lib.Documents())
	}
}
