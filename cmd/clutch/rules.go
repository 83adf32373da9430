package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing/fstest"
	"text/tabwriter"
	"time"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
	"github.com/clutchprotocol/clutch/rules"
	"github.com/clutchprotocol/clutch/rules/rulesapi"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
)

func init() {
	register(&command{
		name:    "rules",
		summary: "list, review (approve, reject), import and export a rules library",
		usage:   "clutch rules list|drafts|show|approve|reject|import|export [flags] [ARG]",
		help: `Works on the rules library of a store (package rules): the team's rules,
workflows and context documents, and the drafts agents propose.

  list            the published documents: id, kind, version, path, description
  drafts          the open drafts: author, id, operation, path, and whether
                  approving would conflict (the document changed meanwhile)
  show ID         a document's text; with --draft, the draft's proposed text
                  (--base: the text it changes)
  approve ID      publish the draft with this id (a document id, or the tmp- id
                  of a new document) as a new version
  reject ID       reject the draft, with --reason
  import DIR      import a folder of markdown files (and its .clutch-rules.json)
  export DIR      write the published documents and the manifest to a folder

A draft is its author's: --author names it when several agents drafted the
same id. With --db (default $CLUTCH_DB, else clutch.db) the file is opened
read-only for list, drafts, show and export, and for writing for approve,
reject and import, whose events are sent as --as; --workspace names the
library. With --url (default $CLUTCH_URL) and --key (default $CLUTCH_API_KEY)
the commands go through the gateway's /v1/rules API (clutch serve mounts it):
the reviewer is the key's caller, who needs the admin scope to approve, reject
or import, and the gateway's library is the one served.`,
		examples: `  clutch rules drafts
  clutch rules show --draft doc_01JD3Z...
  clutch rules approve doc_01JD3Z... --author agent:coder
  clutch rules reject tmp-4f1c... --reason "covered by REVIEW.md"
  clutch rules import ./team-rules --prune --url http://127.0.0.1:8080 --key $KEY
  clutch rules export ./team-rules`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			w := &where{cmd: "rules"}
			fs.StringVar(&w.db, "db", getenv("CLUTCH_DB", "clutch.db"), "the store file: read-only for list, drafts, show, export; written by approve, reject, import ($CLUTCH_DB)")
			fs.StringVar(&w.url, "url", os.Getenv("CLUTCH_URL"), "go through the gateway at this URL instead of the file ($CLUTCH_URL)")
			fs.StringVar(&w.key, "key", "", "the gateway API key, with --url (default $CLUTCH_API_KEY)")
			bindContext(fs)
			fs.DurationVar(&w.lockTimeout, "lock-timeout", time.Second, "how long to wait for a file another process holds")
			workspace := fs.String("workspace", "default", "the library's workspace, with --db (a gateway serves its own)")
			as := fs.String("as", operator, "the reviewer or importer, with --db (with --url: the key's caller)")
			author := fs.String("author", "", "the draft's author (approve, reject, show --draft): needed when several agents drafted the id")
			reason := fs.String("reason", "", "why the draft is rejected (reject)")
			prune := fs.Bool("prune", false, "import: remove the documents the folder no longer has")
			draft := fs.Bool("draft", false, "show: the draft's text instead of the document's")
			base := fs.Bool("base", false, "show --draft: the text the draft changes")
			asJSON := fs.Bool("json", false, "print JSON (the API's shapes)")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) == 0 {
					return usagef("want a subcommand: list, drafts, show, approve, reject, import or export")
				}
				sub, args := args[0], args[1:]
				want := 0
				switch sub {
				case "list", "drafts":
				case "show", "approve", "reject", "import", "export":
					want = 1
				default:
					return usagef("unknown subcommand %q (list, drafts, show, approve, reject, import, export)", sub)
				}
				if len(args) != want {
					if want == 0 {
						return usagef("%s takes no argument", sub)
					}
					return usagef("%s takes one argument", sub)
				}
				if sub == "reject" && strings.TrimSpace(*reason) == "" {
					return usagef("reject needs --reason")
				}
				if (*base || *author != "") && !*draft && sub == "show" {
					return usagef("--base and --author go with show --draft")
				}
				if !strings.HasPrefix(*as, "agent:") {
					return usagef("--as must be an agent id (agent:name)")
				}
				write := sub == "approve" || sub == "reject" || sub == "import"
				c, closeFn, err := w.openRules(ctx, write, sub != "import", *workspace, *as)
				if err != nil {
					return err
				}
				defer closeFn()
				rc := &rulesCmd{c: c, out: e.stdout, json: *asJSON}
				switch sub {
				case "list":
					return rc.list(ctx)
				case "drafts":
					return rc.drafts(ctx)
				case "show":
					if *draft {
						return rc.showDraft(ctx, *author, args[0], *base)
					}
					return rc.show(ctx, args[0])
				case "approve":
					return rc.approve(ctx, *author, args[0])
				case "reject":
					return rc.reject(ctx, *author, args[0], *reason)
				case "import":
					return rc.importDir(ctx, args[0], *prune)
				default:
					return rc.export(ctx, args[0])
				}
			}
		},
	})
}

// openRules returns a client of the rules API: the gateway's with --url,
// else the API of the file's library served in process (rulesapi over a
// store opened read-only, or for writing when write; it must exist when
// mustExist), as caller as with the admin scope.
func (w *where) openRules(ctx context.Context, write, mustExist bool, workspace, as string) (*client.Client, func(), error) {
	if w.url != "" {
		if w.key == "" {
			w.key = os.Getenv("CLUTCH_API_KEY")
		}
		c, err := client.New(w.url, w.key, nil)
		return c, func() {}, err
	}
	if mustExist {
		if _, err := os.Stat(w.db); err != nil {
			return nil, nil, err
		}
	}
	st, err := boltstore.Open(w.db, &boltstore.Options{ReadOnly: !write, LockTimeout: w.lockTimeout})
	if errors.Is(err, boltstore.ErrLocked) {
		return nil, nil, fmt.Errorf("%w\n(to use it now: clutch rules ... --url http://HOST:PORT --key KEY, the gateway of that process)", err)
	}
	if err != nil {
		return nil, nil, err
	}
	lib, err := rules.Open(ctx, st, &rules.Options{Workspace: workspace})
	if err == nil {
		var h http.Handler
		if h, err = rulesapi.New(lib, nil); err == nil {
			caller := &auth.Caller{AgentID: as, Scopes: []string{auth.ScopeAdmin}}
			hc := &http.Client{Transport: inProcess{h: http.StripPrefix("/v1/rules", h), caller: caller}}
			var c *client.Client
			if c, err = client.New("http://in-process", "", hc); err == nil {
				return c, func() { st.Close() }, nil
			}
		}
	}
	st.Close()
	return nil, nil, err
}

// inProcess is an http.RoundTripper that serves each request with a
// handler in this process, as caller.
type inProcess struct {
	h      http.Handler
	caller *auth.Caller
}

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req.WithContext(auth.NewContext(req.Context(), t.caller)))
	if req.Body != nil {
		req.Body.Close()
	}
	return rec.Result(), nil
}

type rulesCmd struct {
	c    *client.Client
	out  io.Writer
	json bool
}

func (rc *rulesCmd) list(ctx context.Context) error {
	list, err := rc.c.RulesDocuments(ctx, false)
	if err != nil {
		return err
	}
	if rc.json {
		return writeJSON(rc.out, list)
	}
	tw := tabwriter.NewWriter(rc.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ID\tKIND\tVERSION\tPATH\tDESCRIPTION\n")
	for _, d := range list.Documents {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", clean(d.ID), clean(string(d.Kind)), d.Version, clean(d.Path), clip(clean(d.Description), 60))
	}
	return tw.Flush()
}

func (rc *rulesCmd) drafts(ctx context.Context) error {
	drafts, err := rc.c.RulesDrafts(ctx)
	if err != nil {
		return err
	}
	if rc.json {
		if drafts == nil {
			drafts = []rulesapi.DraftView{}
		}
		return writeJSON(rc.out, rulesapi.DraftList{Drafts: drafts})
	}
	if len(drafts) == 0 {
		fmt.Fprintln(rc.out, "no open drafts")
		return nil
	}
	tw := tabwriter.NewWriter(rc.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "AUTHOR\tID\tOP\tPATH\tSTATE\tDESCRIPTION\n")
	for _, d := range drafts {
		p := clean(d.Path)
		if d.NewPath != "" {
			p += " -> " + clean(d.NewPath)
		}
		state := "ok"
		if d.Conflict {
			state = "conflict"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", clean(d.Author), clean(d.ID), clean(d.Op), p, state, clip(clean(d.Description), 60))
	}
	return tw.Flush()
}

func (rc *rulesCmd) show(ctx context.Context, id string) error {
	d, err := rc.c.RulesDocument(ctx, id)
	if err != nil {
		return err
	}
	if rc.json {
		return writeJSON(rc.out, d)
	}
	if d.Text != nil {
		_, err = io.WriteString(rc.out, *d.Text)
	}
	return err
}

// findDraft returns the draft with id by author, or by the one author who
// drafted it when author is "".
func (rc *rulesCmd) findDraft(ctx context.Context, author, id string) (rulesapi.DraftView, error) {
	drafts, err := rc.c.RulesDrafts(ctx)
	if err != nil {
		return rulesapi.DraftView{}, err
	}
	var found []rulesapi.DraftView
	for _, d := range drafts {
		if d.ID == id && (author == "" || d.Author == author) {
			found = append(found, d)
		}
	}
	switch len(found) {
	case 0:
		if author != "" {
			return rulesapi.DraftView{}, fmt.Errorf("no draft %s by %s (clutch rules drafts lists them)", id, author)
		}
		return rulesapi.DraftView{}, fmt.Errorf("no draft %s (clutch rules drafts lists them)", id)
	case 1:
		return found[0], nil
	}
	var authors []string
	for _, d := range found {
		authors = append(authors, d.Author)
	}
	return rulesapi.DraftView{}, usagef("%s has drafts by %s: name one with --author", id, strings.Join(authors, ", "))
}

func (rc *rulesCmd) showDraft(ctx context.Context, author, id string, base bool) error {
	d, err := rc.findDraft(ctx, author, id)
	if err != nil {
		return err
	}
	if rc.json {
		return writeJSON(rc.out, d)
	}
	text := d.Text
	if base {
		text = d.BaseText
	}
	_, err = io.WriteString(rc.out, text)
	return err
}

func (rc *rulesCmd) approve(ctx context.Context, author, id string) error {
	if author == "" {
		d, err := rc.findDraft(ctx, "", id)
		if err != nil {
			return err
		}
		author = d.Author
	}
	ap, err := rc.c.RulesApprove(ctx, author, id)
	if err != nil {
		return err
	}
	if rc.json {
		return writeJSON(rc.out, ap)
	}
	if ap.Removed {
		fmt.Fprintf(rc.out, "approved %s's draft %s: removed %s\n", clean(author), clean(id), clean(ap.Document.Path))
		return nil
	}
	fmt.Fprintf(rc.out, "approved %s's draft %s: published %s (%s) version %d\n", clean(author), clean(id), clean(ap.Document.Path), clean(ap.Document.ID), ap.Document.Version)
	return nil
}

func (rc *rulesCmd) reject(ctx context.Context, author, id, reason string) error {
	if author == "" {
		d, err := rc.findDraft(ctx, "", id)
		if err != nil {
			return err
		}
		author = d.Author
	}
	if err := rc.c.RulesReject(ctx, author, id, reason); err != nil {
		return err
	}
	fmt.Fprintf(rc.out, "rejected %s's draft %s\n", clean(author), clean(id))
	return nil
}

// readFolder reads what Library.Import reads of a folder: the .md files
// outside hidden folders, and the manifest.
func readFolder(dir string) (map[string]string, error) {
	root := os.DirFS(dir)
	files := map[string]string{}
	err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") && p != rules.ManifestName {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !(strings.HasSuffix(p, ".md") || p == rules.ManifestName) {
			return nil
		}
		data, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		files[p] = string(data)
		return nil
	})
	return files, err
}

func (rc *rulesCmd) importDir(ctx context.Context, dir string, prune bool) error {
	files, err := readFolder(dir)
	if err != nil {
		return err
	}
	im, err := rc.c.RulesImport(ctx, rulesapi.Import{Files: files, Prune: prune})
	if err != nil {
		return err
	}
	if rc.json {
		return writeJSON(rc.out, im)
	}
	fmt.Fprintf(rc.out, "imported %s: %d published, %d unchanged, %d removed\n", dir, im.Published, im.Unchanged, im.Removed)
	return nil
}

// export writes the documents the API serves to dir, through a library in
// memory that holds them with their ids (Library.Export writes the files
// and the manifest, and removes what the folder's previous manifest listed
// that is gone).
func (rc *rulesCmd) export(ctx context.Context, dir string) error {
	list, err := rc.c.RulesDocuments(ctx, true)
	if err != nil {
		return err
	}
	mem, err := memstore.New(nil)
	if err != nil {
		return err
	}
	defer mem.Close()
	lib, err := rules.Open(ctx, mem, nil)
	if err != nil {
		return err
	}
	files := fstest.MapFS{}
	var man rules.Manifest
	for _, d := range list.Documents {
		if d.Text == nil {
			return fmt.Errorf("the API sent document %s without its text", d.ID)
		}
		files[d.Path] = &fstest.MapFile{Data: []byte(*d.Text), Mode: 0o644}
		man.Documents = append(man.Documents, rules.ManifestEntry{ID: d.ID, Path: d.Path, Kind: d.Kind, Description: d.Description})
	}
	b, err := json.Marshal(man)
	if err != nil {
		return err
	}
	files[rules.ManifestName] = &fstest.MapFile{Data: b, Mode: 0o644}
	if _, err := lib.Import(ctx, files, nil); err != nil {
		return err
	}
	if err := lib.Export(ctx, dir); err != nil {
		return err
	}
	if rc.json {
		return writeJSON(rc.out, map[string]any{"dir": dir, "documents": len(list.Documents)})
	}
	fmt.Fprintf(rc.out, "exported %d documents to %s\n", len(list.Documents), dir)
	return nil
}
