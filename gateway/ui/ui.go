package ui

import (
	"bytes"
	"embed"
	"html"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed assets
var assets embed.FS

// Options configures Handler. The zero value (or nil) is the default.
type Options struct {
	// APIBase is the URL of the gateway's "/v1" API as the page should
	// reach it, relative to the page or absolute. Default "v1" (the API
	// next to the page, as package gateway mounts it).
	APIBase string
	// Title is the page title. Default "Clutch".
	Title string
}

// csp allows only the page's own scripts, styles and API (same origin, which
// includes WebSocket to the same host), and no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler returns the handler that serves the UI: the page at "/" and
// "/index.html", its assets under "/ui/". It is safe for concurrent use.
func Handler(opts *Options) http.Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.APIBase == "" {
		o.APIBase = "v1"
	}
	if o.Title == "" {
		o.Title = "Clutch"
	}
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		panic("ui: index.html is not embedded: " + err.Error()) // a build defect, not input
	}
	page = bytes.ReplaceAll(page, []byte("{{API_BASE}}"), []byte(html.EscapeString(o.APIBase)))
	page = bytes.ReplaceAll(page, []byte("{{TITLE}}"), []byte(html.EscapeString(o.Title)))
	sub, _ := fs.Sub(assets, "assets")
	files := http.StripPrefix("/ui/", http.FileServerFS(sub))

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		switch p := r.URL.Path; {
		case p == "/" || p == "/index.html" || p == "":
			h.Set("Content-Type", "text/html; charset=utf-8")
			if r.Method == http.MethodHead {
				return
			}
			_, _ = w.Write(page)
		case strings.HasPrefix(p, "/ui/") && p != "/ui/index.html" && !strings.HasSuffix(p, "/"):
			files.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}
