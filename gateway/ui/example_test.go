package ui_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/clutchprotocol/clutch/gateway/ui"
)

// The UI next to an API under /v1/ (package gateway mounts it this way for
// you); here a stand-in answers for the API.
func ExampleHandler() {
	mux := http.NewServeMux()
	mux.Handle("/v1/", http.NotFoundHandler()) // the gateway's API
	mux.Handle("/", ui.Handler(nil))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res, err := http.Get(srv.URL + "/")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	page, _ := io.ReadAll(res.Body)
	fmt.Println(res.StatusCode, res.Header.Get("Content-Type"))
	fmt.Println(strings.Contains(string(page), `src="ui/app.js"`))
	// Output:
	// 200 text/html; charset=utf-8
	// true
}
