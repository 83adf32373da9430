package rulesapi

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"testing/fstest"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/internal/httpjson"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/rules"
)

// The sentinel errors of the package; each carries a protocol code, which
// gives the HTTP status of the answer (auth.Status).
var (
	// ErrInvalidOptions: New was given no library.
	ErrInvalidOptions error = coded.New("rulesapi: invalid options", protocol.CodeInvalidField)
	// ErrBadRequest: a body or a query parameter is malformed (400).
	ErrBadRequest error = coded.New("rulesapi: bad request", protocol.CodeInvalidField)
	// ErrNotFound: no such endpoint or document (404).
	ErrNotFound error = coded.New("rulesapi: not found", protocol.CodeNotFound)
	// ErrTooLarge: a body over the limit the handler is mounted with
	// (http.MaxBytesReader; the gateway's MaxBodyBytes) (413).
	ErrTooLarge error = coded.New("rulesapi: body too large", protocol.CodeTooLarge)
)

// Options configures the handler. Nil means defaults.
type Options struct {
	// Logger receives internal errors, which are never sent to clients;
	// slog.Default() when nil.
	Logger *slog.Logger
}

// DocumentView is a published document as the API shows it: the document
// and, for GET /documents/{id} or with ?text=true, its content and (for
// rules and workflows) its constraints.
type DocumentView struct {
	rules.Document
	Text        *string            `json:"text,omitempty"`
	Constraints []rules.Constraint `json:"constraints,omitempty"`
}

// DocumentList is the answer of GET /documents.
type DocumentList struct {
	Workspace string         `json:"workspace"` // the library's workspace id
	Seq       uint64         `json:"seq"`       // the last library event applied
	Documents []DocumentView `json:"documents"`
}

// DraftView is an open draft with what a reviewer compares: BaseText, the
// document as it is now ("" for a create), and Text, what approving the
// draft would publish ("" for a delete).
type DraftView struct {
	rules.Draft
	Author   string `json:"author"`
	BaseText string `json:"base_text"`
	Text     string `json:"text"`
	// Conflict is set when approving would fail with 409: the document
	// changed since the draft was made (or is gone), or the path the
	// draft publishes at is taken.
	Conflict bool `json:"conflict,omitempty"`
}

// DraftList is the answer of GET /drafts.
type DraftList struct {
	Drafts []DraftView `json:"drafts"`
}

// Review is the body of POST /drafts/approve and POST /drafts/reject: the
// draft, by its author and id, and for a rejection the reason.
type Review struct {
	Author string `json:"author"`
	ID     string `json:"id"`
	Reason string `json:"reason,omitempty"`
}

// Approved is the answer of POST /drafts/approve: the document as
// published (for a delete, as it was before its removal).
type Approved struct {
	Document rules.Document `json:"document"`
	Removed  bool           `json:"removed,omitempty"` // the draft deleted the document
}

// Import is the body of POST /import: a folder of markdown files as a map
// of slash-separated path to content (ManifestName among them when the
// folder has one), and whether documents the folder lacks are removed.
type Import struct {
	Files map[string]string `json:"files"`
	Prune bool              `json:"prune,omitempty"`
}

// Imported is the answer of POST /import (rules.ImportStats).
type Imported struct {
	Published int `json:"published"`
	Unchanged int `json:"unchanged"`
	Removed   int `json:"removed"`
}

// DecodeReview decodes a Review body strictly: one JSON object with the
// members of Review only, no duplicate member, valid UTF-8, author and id
// present and within protocol.MaxIDLength.
func DecodeReview(body []byte) (Review, error) {
	var r Review
	if err := jsonv2.Unmarshal(body, &r, jsonv2.RejectUnknownMembers(true)); err != nil {
		return Review{}, coded.Wrap(ErrBadRequest, "the body is not a review {\"author\",\"id\",\"reason\"}", err)
	}
	if r.Author == "" || r.ID == "" {
		return Review{}, coded.Wrap(ErrBadRequest, "author and id are required", nil)
	}
	if len(r.Author) > protocol.MaxIDLength || len(r.ID) > protocol.MaxIDLength || len(r.Reason) > 64<<10 {
		return Review{}, coded.Wrap(ErrBadRequest, "author, id or reason is too long", nil)
	}
	return r, nil
}

// DecodeImport decodes an Import body strictly: one JSON object with the
// members of Import only, no duplicate member, valid UTF-8, and every file
// name a valid slash-separated relative path (io/fs.ValidPath).
func DecodeImport(body []byte) (Import, error) {
	var in Import
	if err := jsonv2.Unmarshal(body, &in, jsonv2.RejectUnknownMembers(true)); err != nil {
		return Import{}, coded.Wrap(ErrBadRequest, "the body is not an import {\"files\",\"prune\"}", err)
	}
	for name := range in.Files {
		if !fs.ValidPath(name) || name == "." || !utf8.ValidString(name) {
			return Import{}, coded.Wrap(ErrBadRequest, "file name "+strconv.Quote(name)+" is not a relative slash-separated path", nil)
		}
	}
	return in, nil
}

// handler serves a library.
type handler struct {
	lib *rules.Library
	log *slog.Logger
	mux *http.ServeMux
}

// New returns the HTTP surface of lib. It does not authenticate: mount it
// behind package auth (the gateway's Options.Rules does); a request
// without an auth.Caller in its context gets 401.
func New(lib *rules.Library, opts *Options) (http.Handler, error) {
	if lib == nil {
		return nil, coded.Wrap(ErrInvalidOptions, "a library is required", nil)
	}
	h := &handler{lib: lib, log: slog.Default(), mux: http.NewServeMux()}
	if opts != nil && opts.Logger != nil {
		h.log = opts.Logger
	}
	h.mux.HandleFunc("GET /documents", h.documents)
	h.mux.HandleFunc("GET /documents/{id...}", h.document)
	h.mux.HandleFunc("GET /drafts", h.drafts)
	h.mux.HandleFunc("POST /drafts/approve", h.approve)
	h.mux.HandleFunc("POST /drafts/reject", h.reject)
	h.mux.HandleFunc("POST /import", h.importFiles)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.error(w, r, coded.Wrap(ErrNotFound, r.Method+" "+r.URL.Path+" is not an endpoint of the rules API", nil))
	})
	return h, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, ok := auth.FromContext(r.Context()); !ok {
		h.error(w, r, auth.ErrUnauthenticated)
		return
	}
	h.mux.ServeHTTP(w, r)
}

func caller(r *http.Request) *auth.Caller {
	c, _ := auth.FromContext(r.Context())
	return c
}

// reader answers r itself and returns false unless the caller may read
// documents, query (nil: [noQuery]) accepts the query parameters and the
// library is up to date with the store.
func (h *handler) reader(w http.ResponseWriter, r *http.Request, query func(url.Values) error) (*auth.Caller, bool) {
	c := caller(r)
	if !c.MayRead() {
		h.error(w, r, auth.ErrForbidden)
		return nil, false
	}
	var err error
	if query != nil {
		err = query(r.URL.Query())
	} else {
		err = noQuery(r)
	}
	if err == nil {
		err = h.lib.Sync(r.Context())
	}
	if err != nil {
		h.error(w, r, err)
		return nil, false
	}
	return c, true
}

// noQuery refuses a request with query parameters.
func noQuery(r *http.Request) error {
	if len(r.URL.Query()) > 0 {
		return coded.Wrap(ErrBadRequest, r.URL.Path+" takes no query parameters", nil)
	}
	return nil
}

func (h *handler) documents(w http.ResponseWriter, r *http.Request) {
	withText := false
	_, ok := h.reader(w, r, func(q url.Values) error {
		for k, v := range q {
			if k != "text" || len(v) != 1 {
				return coded.Wrap(ErrBadRequest, "unknown or repeated query parameter "+k, nil)
			}
			b, err := strconv.ParseBool(v[0])
			if err != nil {
				return coded.Wrap(ErrBadRequest, "text= takes true or false", nil)
			}
			withText = b
		}
		return nil
	})
	if !ok {
		return
	}
	seq := h.lib.Seq()
	docs := h.lib.Documents()
	out := DocumentList{Workspace: h.lib.WorkspaceID(), Seq: seq, Documents: make([]DocumentView, 0, len(docs))}
	for _, d := range docs {
		v := DocumentView{Document: d}
		if withText {
			text, cs, err := h.lib.Content(r.Context(), d.ID)
			if err != nil {
				h.error(w, r, err)
				return
			}
			v.Text, v.Constraints = &text, cs
		}
		out.Documents = append(out.Documents, v)
	}
	httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) document(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.reader(w, r, nil); !ok {
		return
	}
	id := r.PathValue("id")
	d, ok := h.lib.Document(id)
	if !ok {
		h.error(w, r, coded.Wrap(ErrNotFound, "no document "+strconv.Quote(id), nil))
		return
	}
	text, cs, err := h.lib.Content(r.Context(), d.ID)
	if err != nil {
		h.error(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, DocumentView{Document: d, Text: &text, Constraints: cs})
}

func (h *handler) drafts(w http.ResponseWriter, r *http.Request) {
	c, ok := h.reader(w, r, nil)
	if !ok {
		return
	}
	ctx := r.Context()
	byPath := map[string]string{}
	for _, d := range h.lib.Documents() {
		byPath[d.Path] = d.ID
	}
	out := DraftList{Drafts: []DraftView{}}
	for _, d := range h.lib.Drafts() {
		// A caller without read:all reviews nobody's drafts but its own.
		if !c.Has(auth.ScopeReadAll) && d.Author != c.AgentID {
			continue
		}
		base, text, err := h.lib.DraftContent(ctx, d.Author, d.ID)
		if errors.Is(err, rules.ErrNoDraft) {
			continue // approved or rejected meanwhile
		}
		if err != nil {
			h.error(w, r, err)
			return
		}
		out.Drafts = append(out.Drafts, DraftView{Draft: d, Author: d.Author, BaseText: base, Text: text, Conflict: h.conflicts(d, byPath)})
	}
	httpjson.Write(w, http.StatusOK, out)
}

// conflicts reports whether approving d would fail with ErrConflict, as
// Library.Approve decides it.
func (h *handler) conflicts(d rules.Draft, byPath map[string]string) bool {
	if d.Op == "create" {
		_, taken := byPath[d.Path]
		return taken
	}
	cur, ok := h.lib.Document(d.ID)
	switch {
	case !ok:
		if !(d.Kind == rules.KindMPF && d.BaseHash == rules.HashContent([]byte(rules.DefaultMetaPrompt))) {
			return true
		}
	case cur.Hash != d.BaseHash:
		return true
	}
	if d.Op == "rename" {
		if other, taken := byPath[d.NewPath]; taken && other != d.ID {
			return true
		}
	}
	return false
}

// admin answers r itself and returns false unless the caller holds
// auth.ScopeAdmin and r has no query parameters; it returns the body.
func (h *handler) admin(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if !caller(r).Has(auth.ScopeAdmin) {
		h.error(w, r, auth.ErrForbidden)
		return nil, false
	}
	if err := noQuery(r); err != nil {
		h.error(w, r, err)
		return nil, false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		h.error(w, r, err)
		return nil, false
	}
	return body, true
}

// review is admin with the body decoded as a Review.
func (h *handler) review(w http.ResponseWriter, r *http.Request) (Review, bool) {
	body, ok := h.admin(w, r)
	if !ok {
		return Review{}, false
	}
	rv, err := DecodeReview(body)
	if err != nil {
		h.error(w, r, err)
		return Review{}, false
	}
	return rv, true
}

func (h *handler) approve(w http.ResponseWriter, r *http.Request) {
	rv, ok := h.review(w, r)
	if !ok {
		return
	}
	if rv.Reason != "" {
		h.error(w, r, coded.Wrap(ErrBadRequest, "an approval takes no reason", nil))
		return
	}
	ctx := r.Context()
	if err := h.lib.Sync(ctx); err != nil {
		h.error(w, r, err)
		return
	}
	var op string
	for _, d := range h.lib.Drafts() {
		if d.Author == rv.Author && d.ID == rv.ID {
			op = d.Op
		}
	}
	doc, err := h.lib.Approve(ctx, caller(r).AgentID, rv.Author, rv.ID)
	if err != nil {
		h.error(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, Approved{Document: doc, Removed: op == "delete"})
}

func (h *handler) reject(w http.ResponseWriter, r *http.Request) {
	rv, ok := h.review(w, r)
	if !ok {
		return
	}
	if err := h.lib.RejectDraft(r.Context(), caller(r).AgentID, rv.Author, rv.ID, rv.Reason); err != nil {
		h.error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) importFiles(w http.ResponseWriter, r *http.Request) {
	body, ok := h.admin(w, r)
	if !ok {
		return
	}
	in, err := DecodeImport(body)
	if err != nil {
		h.error(w, r, err)
		return
	}
	fsys := make(fstest.MapFS, len(in.Files))
	for name, content := range in.Files {
		fsys[name] = &fstest.MapFile{Data: []byte(content), Mode: 0o644}
	}
	st, err := h.lib.Import(r.Context(), fsys, &rules.ImportOptions{Actor: caller(r).AgentID, Prune: in.Prune})
	if err != nil {
		h.error(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, Imported{Published: st.Published, Unchanged: st.Unchanged, Removed: st.Removed})
}

// errorBody is the gateway's error body.
type errorBody struct {
	Error protocol.ErrorPayload `json:"error"`
}

// error answers err with the status of its protocol code (auth.Status)
// and the gateway's error body; an error without a code of its own
// (INTERNAL) is logged and answered without its text.
func (h *handler) error(w http.ResponseWriter, r *http.Request, err error) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		err = coded.Wrap(ErrTooLarge, "the body is over the limit of "+strconv.FormatInt(tooBig.Limit, 10)+" bytes", nil)
	}
	status := auth.Status(err)
	code := protocol.CodeOf(err)
	p := protocol.ErrorPayload{Code: code, Message: err.Error(), Retryable: code.Retryable()}
	switch {
	case status == http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+auth.DefaultRealm+`"`)
		p = protocol.ErrorPayload{Code: protocol.CodeUnauthorized, Message: "authentication required"}
	case status == http.StatusForbidden && errors.Is(err, auth.ErrForbidden):
		p.Message = "the caller's scopes do not allow this"
	case code == protocol.CodeInternal || status >= 500 && status != http.StatusServiceUnavailable:
		h.log.ErrorContext(r.Context(), "rulesapi: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		p = protocol.ErrorPayload{Code: protocol.CodeInternal, Message: "internal error", Retryable: true}
		status = http.StatusInternalServerError
	}
	httpjson.Write(w, status, errorBody{Error: p})
}
