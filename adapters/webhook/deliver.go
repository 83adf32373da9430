package webhook

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
)

// The delivery record (docs/protocol.md §2.6 extension type).
const (
	// TypeDelivery is the type of the event a Deliverer stores when it is
	// done with an event for a subscription: delivered, or failed for good.
	TypeDelivery protocol.Type = "x.clutch.webhook.delivery"
	// PayloadDelivery is its payload_type, the payload a [Delivery].
	PayloadDelivery = "clutch.webhook.delivery.v1"
	// typePrefix starts every type of this package: events of these types
	// are never delivered (a record would make another record) and never
	// accepted inbound.
	typePrefix = "x.clutch.webhook."
)

// Delivery statuses.
const (
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
)

// Delivery is the payload of a TypeDelivery event: one event of the store
// and what became of its delivery to one subscription.
type Delivery struct {
	Subscription string `json:"subscription"`
	EventID      string `json:"event_id"`
	EventSeq     uint64 `json:"event_seq"`
	EventType    string `json:"event_type"`
	// Status is StatusDelivered (the receiver answered 2xx) or StatusFailed
	// (MaxAttempts attempts failed, or the egress policy refused the URL).
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	// HTTPStatus is the receiver's last status, 0 when none was received.
	HTTPStatus int `json:"http_status,omitempty"`
	// Error is why the last attempt failed, for StatusFailed.
	Error *protocol.ErrorPayload `json:"error,omitempty"`
}

// Defaults of a zero DelivererOptions.
const (
	DefaultFrom        = "agent:webhook"
	DefaultMaxAttempts = 10
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = 10 * time.Minute
	DefaultTimeout     = 30 * time.Second
)

// DelivererOptions configures a Deliverer. Nil means defaults.
type DelivererOptions struct {
	// Egress is the policy every delivery dials through (and Subscribe
	// checks URLs with); egress.Default() when nil.
	Egress *egress.Policy
	// From is the agent id of the delivery records; DefaultFrom when "".
	From string
	// IDs makes the records' ids and timestamps; protocol.DefaultIDs() when
	// nil. Pass the router's (Router.IDs) to share its clock.
	IDs *protocol.IDs
	// Schemas, when set, gets PayloadDelivery registered (an existing
	// registration is kept).
	Schemas *schema.Registry
	// MaxAttempts is how many times one event is tried before it is
	// recorded as failed and the subscription moves on;
	// DefaultMaxAttempts when 0.
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the wait before a retry: the n-th
	// retry waits a random time between half and all of
	// min(MaxBackoff, MinBackoff·2^(n-1)), or the receiver's Retry-After
	// when that is longer and at most MaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// Timeout bounds one attempt; DefaultTimeout when 0.
	Timeout time.Duration
}

// Subscription selects events of the store and names where they go.
type Subscription struct {
	// Name identifies the subscription across restarts: its delivery
	// records are kept under it (1 to 64 of A-Z a-z 0-9 . _ -).
	Name string
	// URL receives the deliveries (http or https; checked against the
	// egress policy by Subscribe, and at every dial).
	URL string
	// Secrets sign each delivery ("whsec_<base64>"), one signature per
	// secret: list the new secret and the old one while the receiver
	// rotates.
	Secrets []string
	// Types are type prefixes ("task.", "task.result", "x.acme."); an event
	// is selected when its type has one of them. Empty selects every type.
	Types []string
	// RunID and AgentID, when set, select only the events of that run,
	// or sent by that agent.
	RunID, AgentID string
	// StartAfter skips the events up to this seq on the first start (pass
	// store.LastSeq to deliver only new events); the delivery records
	// take over after that.
	StartAfter uint64
}

var subName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// sub is a validated Subscription.
type sub struct {
	Subscription
	keys [][]byte
}

func (s *sub) selects(m *protocol.Message) bool {
	if strings.HasPrefix(string(m.Type), typePrefix) {
		return false
	}
	if len(s.Types) == 0 {
		return true
	}
	for _, p := range s.Types {
		if strings.HasPrefix(string(m.Type), p) {
			return true
		}
	}
	return false
}

func (s *sub) runID() string { return protocol.PrefixRun + "webhook:" + s.Name }

// Deliverer is the outbound side: it follows the store and delivers the
// events each subscription selects to its URL, signed, one at a time and in
// store order, with retries, and records each outcome as a TypeDelivery
// event (see the package doc). It is safe for concurrent use.
type Deliverer struct {
	st        store.Store
	policy    *egress.Policy
	client    *http.Client
	transport *http.Transport
	ids       *protocol.IDs
	from      string
	max       int
	minB      time.Duration
	maxB      time.Duration
	timeout   time.Duration

	mu        sync.Mutex
	subs      map[string]*sub
	pending   []*sub
	running   bool
	wake      chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
	runs      sync.WaitGroup
}

// NewDeliverer returns a Deliverer over st. Add subscriptions with
// Subscribe, then call Run.
func NewDeliverer(st store.Store, opts *DelivererOptions) (*Deliverer, error) {
	if st == nil {
		return nil, optionsError("a store is required")
	}
	var o DelivererOptions
	if opts != nil {
		o = *opts
	}
	d := &Deliverer{st: st, policy: o.Egress, ids: o.IDs, from: o.From, max: o.MaxAttempts,
		minB: o.MinBackoff, maxB: o.MaxBackoff, timeout: o.Timeout,
		subs: map[string]*sub{}, wake: make(chan struct{}, 1), closed: make(chan struct{})}
	if d.policy == nil {
		d.policy = egress.Default()
	}
	if d.ids == nil {
		d.ids = protocol.DefaultIDs()
	}
	if d.from == "" {
		d.from = DefaultFrom
	}
	if !strings.HasPrefix(d.from, protocol.PrefixAgent) || len(d.from) == len(protocol.PrefixAgent) {
		return nil, optionsError("DelivererOptions.From must be an agent id")
	}
	if d.max == 0 {
		d.max = DefaultMaxAttempts
	}
	if d.minB == 0 {
		d.minB = DefaultMinBackoff
	}
	if d.maxB == 0 {
		d.maxB = DefaultMaxBackoff
	}
	if d.timeout == 0 {
		d.timeout = DefaultTimeout
	}
	if d.max < 0 || d.minB < 0 || d.maxB < d.minB || d.timeout < 0 {
		return nil, optionsError("DelivererOptions: MaxAttempts, backoffs and Timeout must be positive, MaxBackoff at least MinBackoff")
	}
	if o.Schemas != nil {
		if err := schema.RegisterType[Delivery](o.Schemas, PayloadDelivery); err != nil && !errors.Is(err, schema.ErrAlreadyRegistered) {
			return nil, err
		}
	}
	// A redirect is an answer like any other non-2xx: following one would
	// turn the POST into a GET of another URL.
	base := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var err error
	if d.client, d.transport, err = d.policy.Client(base); err != nil {
		return nil, err
	}
	return d, nil
}

// Subscribe adds a subscription. Its URL is checked against the egress
// policy now (ctx bounds the name resolution); a refused URL is an error
// matching egress.ErrDenied. A subscription added while Run runs starts at
// once.
func (d *Deliverer) Subscribe(ctx context.Context, s Subscription) error {
	if !subName.MatchString(s.Name) {
		return optionsError("Subscription.Name must be 1 to 64 of A-Z a-z 0-9 . _ -")
	}
	if len(s.Secrets) == 0 {
		return optionsError("Subscription.Secrets: at least one secret is required")
	}
	ns := &sub{Subscription: s}
	ns.Types = append([]string(nil), s.Types...)
	ns.Secrets = nil
	for _, sec := range s.Secrets {
		k, err := parseSecret(sec)
		if err != nil {
			return err
		}
		ns.keys = append(ns.keys, k)
	}
	if err := d.policy.CheckURL(ctx, s.URL); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case <-d.closed:
		return ErrClosed
	default:
	}
	if _, dup := d.subs[s.Name]; dup {
		return optionsError("a subscription named " + strconv.Quote(s.Name) + " exists")
	}
	d.subs[s.Name] = ns
	if d.running {
		d.pending = append(d.pending, ns)
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// Run delivers until ctx ends (it then returns ctx.Err()) or Close is called
// (it then returns nil). One goroutine serves each subscription. Only one
// Run may run at a time.
func (d *Deliverer) Run(ctx context.Context) error {
	d.mu.Lock()
	select {
	case <-d.closed:
		d.mu.Unlock()
		return ErrClosed
	default:
	}
	if d.running {
		d.mu.Unlock()
		return optionsError("Run is already running")
	}
	d.running = true
	d.pending = d.pending[:0]
	for _, s := range d.subs {
		d.pending = append(d.pending, s)
	}
	d.runs.Add(1)
	d.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	var workers sync.WaitGroup
	defer func() {
		cancel()
		workers.Wait()
		d.mu.Lock()
		d.running = false
		d.mu.Unlock()
		d.runs.Done()
	}()
	for {
		d.mu.Lock()
		start := d.pending
		d.pending = nil
		d.mu.Unlock()
		for _, s := range start {
			workers.Go(func() { d.work(ctx, s) })
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-d.closed:
			return nil
		case <-d.wake:
		}
	}
}

// Close stops Run, waits for it to return and closes idle connections.
// An event whose delivery was under way is delivered again after the next
// start (at least once: receivers deduplicate by webhook-id).
func (d *Deliverer) Close() error {
	d.closeOnce.Do(func() {
		d.mu.Lock()
		close(d.closed)
		d.mu.Unlock()
	})
	d.runs.Wait()
	d.transport.CloseIdleConnections()
	return nil
}

// work serves one subscription until ctx ends.
func (d *Deliverer) work(ctx context.Context, s *sub) {
	cursor, ok := d.cursor(ctx, s)
	if !ok {
		return
	}
	for ctx.Err() == nil {
		q := store.Query{AfterSeq: cursor, RunID: s.RunID, AgentID: s.AgentID}
		if len(s.Types) == 1 {
			q.TypePrefix = s.Types[0]
		}
		for ev, err := range d.st.Follow(ctx, q) {
			if err != nil {
				if errors.Is(err, store.ErrClosed) {
					return
				}
				break
			}
			m, err := ev.Message()
			if err != nil || !s.selects(m) {
				cursor = ev.Seq
				continue
			}
			rec, ok := d.deliver(ctx, s, ev, m)
			if !ok || !d.record(ctx, s, rec) {
				return
			}
			cursor = ev.Seq
		}
		if !sleep(ctx, d.minB) {
			return
		}
	}
}

// cursor returns the seq after which s resumes: the last event its records
// name, else StartAfter.
func (d *Deliverer) cursor(ctx context.Context, s *sub) (uint64, bool) {
	for n := 1; ; n++ {
		cursor, err := d.recovered(ctx, s)
		if err == nil {
			return cursor, true
		}
		if errors.Is(err, store.ErrClosed) || !sleep(ctx, d.backoff(n)) {
			return 0, false
		}
	}
}

func (d *Deliverer) recovered(ctx context.Context, s *sub) (uint64, error) {
	cursor := s.StartAfter
	for ev, err := range d.st.Read(ctx, store.Query{RunID: s.runID(), AgentID: d.from, TypePrefix: string(TypeDelivery)}) {
		if err != nil {
			return 0, err
		}
		m, err := ev.Message()
		if err != nil {
			continue
		}
		rec, err := protocol.DecodePayload[Delivery](m)
		if err != nil || rec.Subscription != s.Name {
			continue
		}
		cursor = max(cursor, rec.EventSeq)
	}
	return cursor, nil
}

// deliver tries ev until it is delivered, MaxAttempts fail or the egress
// policy refuses it; false when ctx ended first.
func (d *Deliverer) deliver(ctx context.Context, s *sub, ev store.Event, m *protocol.Message) (*Delivery, bool) {
	rec := &Delivery{Subscription: s.Name, EventID: m.ID, EventSeq: ev.Seq, EventType: string(m.Type)}
	for {
		rec.Attempts++
		status, retryAfter, err := d.attempt(ctx, s, m.ID, ev.Raw)
		rec.HTTPStatus = status
		if err == nil {
			rec.Status = StatusDelivered
			return rec, true
		}
		if ctx.Err() != nil {
			return nil, false
		}
		if rec.Attempts >= d.max || errors.Is(err, egress.ErrDenied) {
			p := protocol.NewErrorPayload(err)
			rec.Status, rec.Error = StatusFailed, &p
			return rec, true
		}
		wait := d.backoff(rec.Attempts)
		if retryAfter > wait {
			wait = min(retryAfter, d.maxB)
		}
		if !sleep(ctx, wait) {
			return nil, false
		}
	}
}

// backoff is the jittered wait before retry n (n ≥ 1).
func (d *Deliverer) backoff(n int) time.Duration {
	b := d.minB
	for i := 1; i < n && b < d.maxB; i++ {
		b *= 2
	}
	b = min(b, d.maxB)
	if b <= 1 {
		return b
	}
	return b/2 + rand.N(b/2+1)
}

// attempt posts body once: the receiver's status, its Retry-After, and an
// error unless it answered 2xx.
func (d *Deliverer) attempt(ctx context.Context, s *sub, id string, body []byte) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, &Error{Adapter: name, Code: protocol.CodeInvalidField, Detail: "the subscription URL", Sentinel: ErrDelivery, Err: err}
	}
	ts := time.Now().Unix()
	var sig strings.Builder
	for i, k := range s.keys {
		if i > 0 {
			sig.WriteByte(' ')
		}
		sig.WriteString("v1,")
		sig.WriteString(b64(mac(k, id, ts, body)))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "clutch-webhook")
	req.Header.Set(HeaderID, id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, sig.String())
	resp, err := d.client.Do(req)
	if err != nil {
		code := protocol.CodeToolUnavailable
		if errors.Is(err, egress.ErrDenied) {
			code = protocol.CodePolicyDenied
		}
		return 0, 0, &Error{Adapter: name, Code: code, Detail: "the receiver could not be reached", Sentinel: ErrDelivery, Err: err}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, 0, nil
	}
	var ra time.Duration
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		ra = time.Duration(secs) * time.Second
	}
	return resp.StatusCode, ra, &Error{Adapter: name, Code: protocol.CodeToolUnavailable, Detail: "the receiver answered " + resp.Status, Sentinel: ErrDelivery}
}

// record appends rec, retrying until it is stored; false when ctx ended.
func (d *Deliverer) record(ctx context.Context, s *sub, rec *Delivery) bool {
	m := d.ids.NewMessage(TypeDelivery, d.from)
	m.RunID = s.runID()
	m.ThreadID = protocol.PrefixThread + "webhook:" + s.Name
	m.TaskID = protocol.PrefixTask + "webhook:" + s.Name
	m.PayloadType = PayloadDelivery
	m.IdempotencyKey = "delivery:" + rec.EventID
	if err := m.SetPayload(rec); err != nil {
		return false // a Delivery always encodes
	}
	for n := 1; ; n++ {
		_, err := d.st.Append(ctx, m)
		if err == nil {
			return true
		}
		if errors.Is(err, store.ErrClosed) {
			return false
		}
		if ctx.Err() != nil || !sleep(ctx, d.backoff(n)) {
			// Stopping: one last try, so that a delivery that went through
			// is not sent again at the next start.
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordGrace)
			_, _ = d.st.Append(last, m)
			cancel()
			return false
		}
	}
}

// recordGrace bounds the last append of a record when the Deliverer stops.
const recordGrace = 5 * time.Second

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
