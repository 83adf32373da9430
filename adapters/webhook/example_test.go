package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/adapters/webhook"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// The signature of the Standard Webhooks specification's example.
func ExampleSign() {
	sig, err := webhook.Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	fmt.Println(sig, err)
	// Output: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= <nil>
}

func newRouter() *router.Router {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	reg, _ := registry.Open(ctx, st, nil)
	schemas, _ := schema.New(nil)
	r, _ := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	return r
}

// A billing service's "invoice.paid" webhook starts a task of agent:books.
func ExampleNewHandler() {
	r := newRouter()
	defer r.Close()
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:books", Capabilities: []protocol.Capability{{ID: "skill:billing"}}}
	_ = r.Register(context.Background(), card, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		return &router.Result{Payload: map[string]string{"booked": "yes"}}, nil
	})

	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	h, err := webhook.NewHandler(r, &webhook.Mapping{
		TypeFrom: "/type",
		Types:    map[string]protocol.Type{"invoice.paid": protocol.TypeTaskRequest},
		Payload:  "/data",
		Requires: []string{"skill:billing"},
	}, map[string]auth.Caller{secret: {AgentID: "agent:billing-saas", Scopes: []string{auth.ScopeSubmit}}}, nil)
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	// What the billing service sends.
	body := `{"type":"invoice.paid","data":{"invoice":"in_1","amount":1200}}`
	now := time.Now()
	sig, _ := webhook.Sign(secret, "evt_1", now, []byte(body))
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	req.Header.Set(webhook.HeaderID, "evt_1")
	req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(webhook.HeaderSignature, sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	var rc webhook.Receipt
	_ = json.NewDecoder(resp.Body).Decode(&rc)
	resp.Body.Close()
	acc := rc.Envelopes[0]
	fmt.Println(resp.StatusCode, acc.Type)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ev := range r.Store().Follow(ctx, store.Query{TaskID: acc.TaskID, TypePrefix: "task.result"}) {
		m, _ := ev.Message()
		fmt.Println(m.Type, string(m.Payload))
		break
	}
	// Output:
	// 200 task.request
	// task.result {"booked":"yes"}
}

// Task results go to a CRM's URL, signed, and each outcome is recorded.
func ExampleDeliverer() {
	r := newRouter()
	defer r.Close()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	got := make(chan string, 1)
	crm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var m struct{ Type string }
		_ = json.Unmarshal(body, &m)
		got <- req.Header.Get(webhook.HeaderID)[:4] + " " + m.Type
	}))
	defer crm.Close()

	policy, _ := egress.New(&egress.Options{Allow: []string{"127.0.0.1"}}) // the test server is on loopback
	d, err := webhook.NewDeliverer(r.Store(), &webhook.DelivererOptions{Egress: policy, IDs: r.IDs(), Schemas: schema.RegistryOf(r.Validator())})
	if err != nil {
		panic(err)
	}
	err = d.Subscribe(context.Background(), webhook.Subscription{Name: "crm", URL: crm.URL, Secrets: []string{secret}, Types: []string{"x.acme."}})
	if err != nil {
		panic(err)
	}
	go d.Run(context.Background())
	defer d.Close()

	m := r.IDs().NewMessage("x.acme.lead", "agent:sales")
	m.To = []protocol.Participant{}
	_ = m.SetPayload(map[string]string{"name": "Ada"})
	_, _ = r.Store().Append(context.Background(), m)
	fmt.Println(<-got)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ev := range r.Store().Follow(ctx, store.Query{TypePrefix: string(webhook.TypeDelivery)}) {
		rec, _ := ev.Message()
		dl, _ := protocol.DecodePayload[webhook.Delivery](rec)
		fmt.Println(dl.Subscription, dl.Status, dl.Attempts)
		break
	}
	// Output:
	// msg_ x.acme.lead
	// crm delivered 1
}
