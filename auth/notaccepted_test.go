package auth

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestNoKeyAndWrongKeyDiffer: a Guard tells a request without
// credentials (ErrNoCredentials) from one whose credentials nobody took
// (ErrNotAccepted) — both 401 with the same challenge — by what the
// request carries alone: a wrong key and a key of the wrong form get the
// same answer.
func TestNoKeyAndWrongKeyDiffer(t *testing.T) {
	g, err := NewGuard(keys(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		hdr  map[string]string
		want error
		msg  string
	}{
		{"no key", nil, ErrNoCredentials, "no credentials given (send Authorization: Bearer KEY)"},
		{"wrong bearer", map[string]string{"Authorization": "Bearer wrong-0123456789abcdef"}, ErrNotAccepted, "credentials not accepted"},
		{"wrong X-API-Key", map[string]string{"X-API-Key": "wrong-0123456789abcdef"}, ErrNotAccepted, "credentials not accepted"},
		{"malformed", map[string]string{"Authorization": "Basic eDp5"}, ErrUnauthenticated, "credentials not accepted"},
	} {
		_, _, err := g.Admit(req(c.hdr))
		if !errors.Is(err, c.want) || !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if c.want != ErrNoCredentials && errors.Is(err, ErrNoCredentials) {
			t.Errorf("%s: %v is ErrNoCredentials", c.name, err)
		}
		rec := httptest.NewRecorder()
		g.WriteError(rec, err)
		var body struct{ Code, Message string }
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if rec.Code != http.StatusUnauthorized || body.Code != "UNAUTHORIZED" || body.Message != c.msg ||
			rec.Header().Get("WWW-Authenticate") != `Bearer realm="clutch"` {
			t.Errorf("%s: %d %s", c.name, rec.Code, rec.Body)
		}
	}
	if c, _, err := g.Admit(req(map[string]string{"Authorization": "Bearer " + kenKey})); err != nil || c.AgentID != "agent:ken" {
		t.Fatalf("the right key: %v %v", c, err)
	}
}
