package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestHandlerServesPageAndAssets(t *testing.T) {
	h := Handler(nil)
	for _, path := range []string{"/", "/index.html"} {
		res, body := get(t, h, http.MethodGet, path)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
		}
		if !strings.Contains(body, `<meta name="clutch-api" content="v1">`) || !strings.Contains(body, "<title>Clutch</title>") {
			t.Fatalf("GET %s: page without its defaults:\n%s", path, body)
		}
		if strings.Contains(body, "{{") {
			t.Fatalf("GET %s: a placeholder is left in the page", path)
		}
	}
	for path, ctype := range map[string]string{"/ui/app.js": "javascript", "/ui/app.css": "text/css"} {
		res, body := get(t, h, http.MethodGet, path)
		if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Content-Type"), ctype) || len(body) < 1000 {
			t.Fatalf("GET %s: %d %q, %d bytes", path, res.StatusCode, res.Header.Get("Content-Type"), len(body))
		}
	}
	res, body := get(t, h, http.MethodHead, "/")
	if res.StatusCode != 200 || body != "" {
		t.Fatalf("HEAD /: %d with %d bytes", res.StatusCode, len(body))
	}
}

func TestHandlerRefuses(t *testing.T) {
	h := Handler(nil)
	for _, path := range []string{"/nope", "/ui/", "/ui/missing.js", "/ui/index.html", "/v1/agents", "/ui/../ui.go"} {
		if res, _ := get(t, h, http.MethodGet, path); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, res.StatusCode)
		}
	}
	if res, _ := get(t, h, http.MethodPost, "/"); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", res.StatusCode)
	}
}

func TestHandlerSecurityHeaders(t *testing.T) {
	res, _ := get(t, Handler(nil), http.MethodGet, "/")
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "default-src 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy %q allows unsafe sources", csp)
	}
	if res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("no X-Content-Type-Options: nosniff")
	}
}

func TestHandlerOptionsAreEscaped(t *testing.T) {
	_, body := get(t, Handler(&Options{APIBase: `/api/v1"><script>x()</script>`, Title: "<Team & Co>"}), http.MethodGet, "/")
	if strings.Contains(body, "<script>x()") || strings.Contains(body, "<Team &") {
		t.Fatalf("options reach the page unescaped:\n%s", body)
	}
	if !strings.Contains(body, `content="/api/v1&#34;&gt;&lt;script&gt;x()&lt;/script&gt;"`) || !strings.Contains(body, "<title>&lt;Team &amp; Co&gt;</title>") {
		t.Fatalf("options missing from the page:\n%s", body)
	}
}
