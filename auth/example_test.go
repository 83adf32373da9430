package auth_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/clutchprotocol/clutch/auth"
)

func ExampleMiddleware() {
	keys, err := auth.APIKeys(map[string]auth.Caller{
		"ken-key-0123456789abcdef": {AgentID: "agent:ken", Scopes: []string{auth.ScopeSubmit}},
	})
	if err != nil {
		panic(err)
	}
	surface := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := auth.FromContext(r.Context())
		fmt.Fprintf(w, "hello %s, submit=%v", c.AgentID, c.Has(auth.ScopeSubmit))
	})
	h := auth.Middleware(keys, nil)(surface)

	for _, key := range []string{"ken-key-0123456789abcdef", "", "wrong-key-0123456789abcdef"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body, _ := io.ReadAll(rec.Body)
		if rec.Code == http.StatusOK {
			fmt.Println(rec.Code, string(body))
		} else {
			fmt.Println(rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
	}
	// Output:
	// 200 hello agent:ken, submit=true
	// 401 Bearer realm="clutch"
	// 401 Bearer realm="clutch"
}

func ExampleChain() {
	keys, _ := auth.APIKeys(map[string]auth.Caller{"ops-key-0123456789abcdef": {AgentID: "agent:ops", Scopes: []string{auth.ScopeAdmin}}})
	a := auth.Chain(keys, auth.Anonymous(auth.Caller{AgentID: "agent:anonymous"}))

	anon := httptest.NewRequest(http.MethodGet, "/", nil)
	c, err := a.Authenticate(anon)
	fmt.Println(c.AgentID, c.Has(auth.ScopeSubmit), err)

	bad := httptest.NewRequest(http.MethodGet, "/", nil)
	bad.Header.Set("X-API-Key", "not-a-key-0123456789")
	_, err = a.Authenticate(bad)
	fmt.Println(err)
	// Output:
	// agent:anonymous false <nil>
	// auth: unauthenticated: credentials were presented but not accepted
}
