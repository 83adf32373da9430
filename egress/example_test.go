package egress_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
)

// The default policy refuses loopback, private and link-local addresses,
// the cloud metadata address among them, whatever name leads there.
func ExampleDefault() {
	err := egress.Default().CheckURL(context.Background(), "http://169.254.169.254/latest/meta-data/")
	var d *egress.DeniedError
	fmt.Println(errors.As(err, &d), protocol.CodeOf(err))
	fmt.Println(d.Rule)
	// Output:
	// true POLICY_DENIED
	// cloud metadata 169.254.169.254/32 is refused unless an IP or CIDR rule allows it
}

// An HTTP client that may reach one loopback server, as tests against
// httptest need.
func ExamplePolicy_HTTPClient() {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
	defer hs.Close()

	p, err := egress.New(&egress.Options{Allow: []string{"127.0.0.1"}})
	if err != nil {
		panic(err)
	}
	hc, err := p.HTTPClient(nil)
	if err != nil {
		panic(err)
	}
	resp, err := hc.Get(hs.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(string(b))

	_, err = egress.Default().DialContext(context.Background(), "tcp", hs.Listener.Addr().String())
	fmt.Println(errors.Is(err, egress.ErrDenied))
	// Output:
	// hello
	// true
}

// An agent's card decides the level it dials with: none refuses every
// destination, egress-restricted only the allowlist.
func ExamplePolicy_Network() {
	p, _ := egress.New(&egress.Options{Allow: []string{"api.example.com:443"}})
	for _, level := range []string{"none", "egress-restricted", "open"} {
		q, _ := p.Network(level)
		fmt.Println(level, "→", q.Level(), q.AllowsNothing())
	}
	// Output:
	// none → none true
	// egress-restricted → egress-restricted false
	// open → open false
}
