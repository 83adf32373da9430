package httpjson

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	Write(rec, http.StatusCreated, map[string]int{"n": 1})
	if rec.Code != http.StatusCreated || rec.Body.String() != "{\"n\":1}\n" {
		t.Fatalf("got %d %q", rec.Code, rec.Body.String())
	}
	checkHeaders(t, rec)
}

func TestWriteBody(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteBody(rec, http.StatusOK, []byte("{\"events\":[]}\n"))
	if rec.Code != http.StatusOK || rec.Body.String() != "{\"events\":[]}\n" {
		t.Fatalf("got %d %q", rec.Code, rec.Body.String())
	}
	checkHeaders(t, rec)
}

func checkHeaders(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	for k, want := range map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"} {
		if got := rec.Header().Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
}

func TestWriteUnencodable(t *testing.T) {
	rec := httptest.NewRecorder()
	Write(rec, http.StatusOK, map[string]any{"f": func() {}})
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != internal+"\n" {
		t.Fatalf("got %d %q", rec.Code, rec.Body.String())
	}
}

// TestWriteNoHTMLEscape: angle brackets and ampersands are written as
// they are, in strings and in raw JSON alike.
func TestWriteNoHTMLEscape(t *testing.T) {
	rec := httptest.NewRecorder()
	Write(rec, http.StatusOK, map[string]any{"m": "a <b> & c", "raw": json.RawMessage(`{"x":"<y>"}`)})
	want := "{\"m\":\"a <b> & c\",\"raw\":{\"x\":\"<y>\"}}\n"
	if got := rec.Body.String(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	b, err := Marshal("<&>")
	if err != nil || string(b) != `"<&>"` {
		t.Fatalf("Marshal: %q %v", b, err)
	}
}
