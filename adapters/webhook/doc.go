// Package webhook is Clutch's generic HTTP webhook adapter (docs/protocol.md
// §7.3, "http"): a Handler that receives webhooks from any system that signs
// them with the Standard Webhooks scheme and turns each into an envelope, and
// a Deliverer that sends selected events of the store to subscribers' URLs,
// signed the same way, and records every outcome in the store.
//
// # The signature scheme
//
// Both sides speak Standard Webhooks (standardwebhooks.com): three headers,
//
//	webhook-id:        the delivery's id, the same on every retry
//	webhook-timestamp: Unix seconds when it was signed
//	webhook-signature: "v1,<base64 HMAC-SHA256 of id.timestamp.body>", several
//	                   separated by spaces
//
// keyed by a shared secret written "whsec_<base64 key>" (at least
// MinSecretBytes). A receiver accepts a delivery when its timestamp is within
// the tolerance of its clock (DefaultTolerance, 5 minutes, either direction:
// a replayed delivery is refused once it is older) and one of the signatures
// is the HMAC under one of its secrets. Several secrets are key rotation:
// the Handler accepts each it is given, and a Subscription with two secrets
// sends two signatures. Sign computes a signature, for senders written in Go.
//
// # Receiving: Handler
//
//	h, err := webhook.NewHandler(r, &webhook.Mapping{
//		TypeFrom: "/type",
//		Types:    map[string]protocol.Type{"invoice.paid": protocol.TypeTaskRequest},
//		Payload:  "/data",
//		Requires: []string{"skill:billing"},
//	}, map[string]auth.Caller{
//		os.Getenv("BILLING_WHSEC"): {AgentID: "agent:billing-saas", Scopes: []string{auth.ScopeSubmit}},
//	}, nil)
//	http.Handle("/hooks/billing", h)
//
// Each secret maps to the sender it authenticates (an auth.Caller with
// auth.ScopeSubmit): the signature is the sender's authentication, and its
// agent id is the envelope's from. HandlerOptions.Auth puts the auth
// package's authenticator and limits in front as well; its caller must then
// be the one whose secret signed.
//
// A Mapping declares how a body becomes an envelope: a type (fixed, or looked
// up from an event name in the body), a payload_type, the payload, and JSON
// pointers (RFC 6901) for run_id, thread_id, task_id, parent_task_id, domain
// and the sender's own event id; fixed recipients and requires[]; meta keys
// copied from the body. With Each, a body is a batch: every element of the
// array it points to gives one envelope, in order (a crewAI AMP
// {"events": [...]} delivery, say). NewHandler validates the mapping. Every
// item of a body is mapped before anything is handed on, so a body with one
// bad item gives nothing. An id the mapping does not give is generated,
// except the run of a delivery without a mapped run_id, which is derived
// (auth.Deriver, keyed with the store's secret) from the endpoint, the
// sender and the delivery's id (the webhook-id; for a
// single event with a mapped IdempotencyKey, that key): every item of a
// batch is in that one run, and in one thread unless thread_id is mapped.
// Every envelope carries meta.src "webhook", meta.webhook_id and
// meta.webhook_endpoint (and meta.webhook_event with TypeFrom,
// meta.webhook_index with Each).
//
// Credentials and size. Nothing a sender echoes as a credential is stored:
// in the payload and the copied meta, the value of any member named as one
// (authorization, cookie, x-api-key, token, secret, password, …) and any
// "Bearer …" or "Basic …" value becomes "[redacted]". Text is kept once: a
// Mapping.Meta value over MaxMetaCopy bytes that lies inside the payload is
// not copied (meta.webhook_in_payload names it), and an envelope that
// would be over the event store's limit has its longest strings cut, each
// ending in "… [truncated, <size> bytes]" and listed in meta.truncated.
//
// Translator is the same Mapping as an inbound-only adapters.Adapter, for
// bodies that arrive some other way (no signature): the items of one body
// share one generated run and thread unless the mapping gives them.
//
// # Where envelopes go
//
//   - task.request and task.cancel go to router.Router.Admit: the task runs
//     (or is cancelled) as if submitted in process, after the router's
//     signature policy and payload validation. The default policy
//     (registry.DefaultSignaturePolicy) wants every task.cancel from outside
//     signed with the sender's Clutch key, which a webhook sender does not
//     have: such a cancel is refused (401 BAD_SIGNATURE) unless the host
//     drops task.cancel from registry.Options.Signatures. Only the sender
//     that requested a task may cancel it.
//   - chat.message, chat.system and x.<vendor>.<name> extension events are
//     checked with router.Router.Verify and, when they carry a payload_type,
//     with the router's Validator (when it has one), then appended to the
//     router's store.
//
// Other types are refused by NewHandler: the rest of the task lifecycle
// belongs to the router and its agents, and the package's own
// x.clutch.webhook.* types to the Deliverer.
//
// A delivery is answered 200 with a Receipt: per envelope its id, type, run
// and task, the store seq for appended events, and duplicate. Envelopes are
// handed on in order; should one be refused after others were taken, the
// answer is the refusal, and the sender's retry finds the others by their
// idempotency keys.
//
// # Deduplication
//
// A sender retries a delivery with the same webhook-id. The envelope's
// idempotency_key is derived from the endpoint, the sender and the
// webhook-id (with the item's index for a batch), or from the body's own
// event id (Mapping.IdempotencyKey), so the
// store's dedup by (run_id, idempotency_key) (docs/protocol.md §5.2) answers a
// retry with the first envelope: a task runs once, an event is stored once,
// and the answer says duplicate. The same id from another sender or another
// endpoint is another delivery. The window is the store's (for boltstore,
// forever).
//
// # Tenancy
//
// The Handler applies docs/protocol.md §6.7: every envelope passes
// auth.CheckWrite for its sender before the router or the store sees it.
// A run, thread or task id the mapping takes from the body that exists and
// belongs to another sender, or that is reserved (protocol.Reserved: the
// Deliverer's runs "run:webhook:<name>", the registry's, the rules
// library's, "clutch_…"), is refused with 404 NOT_FOUND, the answer for a
// missing id; a parent_task_id must name a task the sender may read. A
// store-level duplicate is answered only to the sender of the original.
// The ids the Handler derives are keyed with the store's secret, so no
// sender can compute another's run and create it first.
//
// # Delivering: Deliverer
//
//	d, err := webhook.NewDeliverer(st, &webhook.DelivererOptions{Egress: policy, IDs: r.IDs(), Schemas: schema.RegistryOf(r.Validator())})
//	err = d.Subscribe(ctx, webhook.Subscription{
//		Name: "crm", URL: "https://crm.example.com/hooks/clutch",
//		Secrets: []string{os.Getenv("CRM_WHSEC")}, Types: []string{"task.result", "task.error"},
//	})
//	go d.Run(ctx)
//	defer d.Close()
//
// A subscription selects events by type prefix, run and sender agent, and
// receives each as a POST of the envelope's stored bytes (application/json)
// with webhook-id = the envelope's id. Delivery is in store order, one at a
// time per subscription (an event is delivered, or failed for good, before
// the next is tried); subscriptions do not wait for each other. A non-2xx
// answer, a timeout or a connection error is retried after a jittered
// exponential backoff (MinBackoff doubling up to MaxBackoff, or a longer
// Retry-After up to MaxBackoff), up to MaxAttempts; then the event is
// recorded as failed and the subscription moves on. Redirects are not
// followed.
//
// Each outcome is stored as an event of type TypeDelivery
// (x.clutch.webhook.delivery, payload_type PayloadDelivery, payload a
// Delivery: subscription, event id and seq, status delivered or failed,
// attempts, last HTTP status, error) from DelivererOptions.From, in the run
// "run:webhook:<subscription name>". These records are the subscription's
// cursor: at start it resumes after the last event they name, so nothing is
// lost while the receiver is down or the process is stopped. Delivery is at
// least once: an event delivered just before a stop, whose record was not yet
// stored, is delivered again; receivers deduplicate by webhook-id. A new
// subscription delivers the matching history from the start of the log
// unless StartAfter says otherwise. Events of the package's own types are
// never delivered.
//
// Subscription URLs are user input: Subscribe checks each against the egress
// policy (egress.Policy.CheckURL), and every delivery dials through it.
//
// # Errors
//
// Refusals answer with the status of their protocol code and a JSON body
// {"error", "code", "message", "path", "retryable"}; nothing of a refused
// delivery is stored:
//
//	400 MISSING_FIELD / INVALID_FIELD  a webhook-id or webhook-timestamp header missing or malformed
//	401 BAD_SIGNATURE                  no or no matching signature, timestamp outside the tolerance
//	401 UNAUTHORIZED, 429, 503         from HandlerOptions.Auth and Limits
//	403 POLICY_DENIED                  the sender lacks auth.ScopeSubmit, or another caller authenticated
//	413 TOO_LARGE                      the body is over MaxBodyBytes
//	400 INVALID_JSON, DUPLICATE_KEY, INVALID_UTF8, WRONG_TYPE, MISSING_FIELD, UNKNOWN_TYPE
//	                                   the body does not fit the Mapping ("path" is the JSON pointer)
//	4xx/5xx                            the router's or the store's refusal (VALIDATION, CAPACITY, ...)
//
// Go errors are *Error (adapters.Error) matching ErrInvalidOptions,
// ErrSignature, ErrInput or ErrDelivery, and their protocol code.
//
// # Caveats
//
// A subscription's cursor is recovered by reading its delivery records, a
// read that grows with the number of events delivered. Subscriptions are
// configured in Go at every start; they are not stored. The clock of the
// replay window is the router's (router.Router.IDs().Now()).
package webhook
