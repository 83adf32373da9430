package auth_test

import (
	"context"
	"fmt"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/memstore"
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

// CheckWrite before a surface stores anything for a caller: another
// caller's run is refused exactly as a missing one.
func ExampleCheckWrite() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	defer st.Close()
	ken := &auth.Caller{AgentID: "agent:ken", Scopes: []string{auth.ScopeSubmit}}
	eve := &auth.Caller{AgentID: "agent:eve", Scopes: []string{auth.ScopeSubmit}}

	first := protocol.NewMessage(protocol.TypeChatMessage, ken.AgentID)
	first.RunID = "run_kens"
	fmt.Println(auth.CheckWrite(ctx, st, ken, first)) // a new run: ken may create it
	st.Append(ctx, first)

	intruder := protocol.NewMessage(protocol.TypeChatMessage, eve.AgentID)
	intruder.RunID = "run_kens"
	fmt.Println(auth.CheckWrite(ctx, st, eve, intruder))
	ok, _ := auth.MayRead(ctx, st, eve, auth.KindRun, "run_kens")
	fmt.Println("eve reads it:", ok)
	// Output:
	// <nil>
	// auth: not found: no run run_kens
	// eve reads it: false
}

// A Deriver gives each caller its own run for its own idempotency key,
// keyed with the store's secret.
func ExampleDeriver() {
	st, _ := memstore.New(nil)
	defer st.Close()
	d := auth.NewDeriver(st)
	ctx := context.Background()
	ken := &auth.Caller{AgentID: "agent:ken"}
	eve := &auth.Caller{AgentID: "agent:eve"}
	first, _ := d.RunID(ctx, ken, "http", "order-7")
	again, _ := d.RunID(ctx, ken, "http", "order-7")
	eves, _ := d.RunID(ctx, eve, "http", "order-7")
	fmt.Println(first == again)
	fmt.Println(first == eves)
	// Output:
	// true
	// false
}
