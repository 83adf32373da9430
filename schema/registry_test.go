package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/invopop/jsonschema"

	"github.com/clutchprotocol/clutch/protocol"
)

func TestNewOptions(t *testing.T) {
	if _, err := New(&Options{MaxPayloadBytes: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("negative MaxPayloadBytes: %v", err)
	}
	reg := newRegistry(t, nil)
	if reg.Permissive() || reg.maxBytes != DefaultMaxPayloadBytes || reg.Len() != len(Builtins()) {
		t.Fatalf("defaults: permissive %v, max %d, len %d", reg.Permissive(), reg.maxBytes, reg.Len())
	}
}

func TestRegisterLookupList(t *testing.T) {
	reg := newRegistry(t, nil)
	doc := `{"type":"object","required":["total"],"properties":{"total":{"type":"number","minimum":0}}}`
	if err := reg.Register("billing.invoice.v1", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	s, ok := reg.Lookup("billing.invoice.v1")
	if !ok || s.PayloadType() != "billing.invoice.v1" || s.Ref() != "schema://clutch/billing/invoice@1" || s.GoType() != nil {
		t.Fatalf("Lookup: %v %+v", ok, s)
	}
	if string(s.JSON()) != doc {
		t.Fatalf("JSON() = %s", s.JSON())
	}
	s.JSON()[0] = 'X' // a copy
	if string(s.JSON()) != doc {
		t.Fatal("JSON() shares memory")
	}
	var got []string
	for _, s := range reg.List() {
		got = append(got, s.PayloadType())
	}
	want := append(Builtins(), "billing.invoice.v1")
	if diff := cmp.Diff([]string{"billing.invoice.v1", "code.output.v1", "code.review.v1", "research.query.v1", "research.sources.v1", "research.summary.v1", "review.feedback.v1"}, got); diff != "" || len(want) != reg.Len() {
		t.Fatalf("List (-want +got):\n%s", diff)
	}
	if _, ok := reg.Lookup("billing.receipt.v1"); ok {
		t.Fatal("Lookup of an unknown type")
	}

	// Registering again, or under a malformed name, fails.
	err := reg.Register("billing.invoice.v1", []byte(`{}`))
	if !errors.Is(err, ErrAlreadyRegistered) || protocol.CodeOf(err) != protocol.CodeConflict {
		t.Fatalf("duplicate: %v", err)
	}
	if err := RegisterType[ResearchSummary](reg, PayloadResearchSummary); !errors.Is(err, ErrAlreadyRegistered) {
		t.Fatalf("duplicate built-in: %v", err)
	}
	for _, bad := range []string{"", "invoice", "billing.invoice", "billing.invoice.1", "billing..invoice.v1", "billing invoice.v1"} {
		err := reg.Register(bad, []byte(`{}`))
		if !errors.Is(err, ErrInvalidPayloadType) || protocol.CodeOf(err) != protocol.CodeInvalidField {
			t.Errorf("Register(%q): %v", bad, err)
		}
	}
	// Over the schema size limit.
	big := `{"description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`
	if err := reg.Register("big.schema.v1", []byte(big)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("big schema: %v", err)
	}
}

func TestValidatePayloadErrors(t *testing.T) {
	reg := newRegistry(t, &Options{MaxPayloadBytes: 64})
	valid := `{"findings":["a"],"citations":["b"]}`
	if err := reg.Validate(PayloadResearchSummary, []byte(valid)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, payload string
		want          error
		code          protocol.Code
	}{
		{"empty", ``, ErrInvalidJSON, protocol.CodeInvalidJSON},
		{"blank", "  \n", ErrInvalidJSON, protocol.CodeInvalidJSON},
		{"truncated", `{"findings":[`, ErrInvalidJSON, protocol.CodeInvalidJSON},
		{"trailing", valid + ` {}`, ErrInvalidJSON, protocol.CodeInvalidJSON},
		{"two_values", `1 2`, ErrInvalidJSON, protocol.CodeInvalidJSON},
		{"not_json", `findings: [a]`, ErrInvalidJSON, protocol.CodeInvalidJSON},
		{"too_large", `{"findings":["` + strings.Repeat("a", 64) + `"],"citations":[]}`, ErrTooLarge, protocol.CodeTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := reg.Validate(PayloadResearchSummary, []byte(c.payload))
			if !errors.Is(err, c.want) || !errors.Is(err, c.code) || protocol.CodeOf(err) != c.code {
				t.Fatalf("got %v (code %s), want %v", err, protocol.CodeOf(err), c.want)
			}
			var ve *ValidationError
			if errors.As(err, &ve) {
				t.Fatal("not a validation error")
			}
		})
	}
	// Numbers that would cost gojsonschema's big.Rat seconds are refused
	// up front (1e999999 alone: ~0.25 s); ordinary big ones are fine.
	big := newRegistry(t, nil)
	for _, n := range []string{`1e999999`, `-1E+1001`, `1e-99999`, strings.Repeat("9", 257)} {
		start := time.Now()
		err := big.Validate(PayloadResearchSummary, []byte(`{"findings":[`+n+`],"citations":[]}`))
		if !errors.Is(err, ErrTooLarge) || time.Since(start) > 50*time.Millisecond {
			t.Errorf("%.20s: %v after %v", n, err, time.Since(start))
		}
	}
	for _, n := range []string{`1e308`, `1E-1000`, `1e+0999`, strings.Repeat("9", 256)} {
		ve := validationErr(t, big.Validate(PayloadResearchSummary, []byte(`{"findings":[`+n+`],"citations":[]}`)))
		if !hasViolation(ve, "/findings/0", "type") {
			t.Errorf("%.20s: %v", n, ve)
		}
	}
	// Trailing whitespace is fine.
	if err := reg.Validate(PayloadResearchSummary, []byte(valid+" \n\t")); err != nil {
		t.Fatal(err)
	}
}

func TestValidationError(t *testing.T) {
	reg := newRegistry(t, nil)
	err := reg.Validate(PayloadResearchSummary, []byte(`{"findings":["a",2],"title":false,"x":1}`))
	ve := validationErr(t, err)
	want := []Violation{
		{"/citations", "required", "citations is required"},
		{"/findings/1", "type", "Invalid type. Expected: string, given: integer"},
		{"/title", "type", "Invalid type. Expected: string, given: boolean"},
		{"/x", "additionalProperties", "Additional property x is not allowed"},
	}
	if diff := cmp.Diff(want, ve.Violations); diff != "" {
		t.Fatalf("violations (-want +got):\n%s", diff)
	}
	if ve.PayloadType != PayloadResearchSummary {
		t.Fatal(ve.PayloadType)
	}
	msg := err.Error()
	if !contains(msg, "research.summary.v1", "4 violations", "/findings/1: type:", "/citations: required: citations is required") {
		t.Fatalf("Error() = %s", msg)
	}
	// On the wire.
	wire := protocol.NewErrorPayload(err)
	if wire.Code != protocol.CodeValidation || wire.Retryable {
		t.Fatalf("wire: %+v", wire)
	}
	// Wrapped, it still matches.
	wrapped := fmt.Errorf("router: %w", err)
	if !errors.Is(wrapped, ErrValidation) || protocol.CodeOf(wrapped) != protocol.CodeValidation {
		t.Fatal("wrapping loses the match")
	}
	// Member names with "/" and "~" are escaped in paths.
	if err := reg.Register("test.escape.v1", []byte(`{"additionalProperties":false,"required":["a/b"]}`)); err != nil {
		t.Fatal(err)
	}
	ve = validationErr(t, reg.Validate("test.escape.v1", []byte(`{"c~d":1}`)))
	if !hasViolation(ve, "/a~1b", "required") || !hasViolation(ve, "/c~0d", "additionalProperties") {
		t.Fatal(ve)
	}
}

func TestUnknownPayloadType(t *testing.T) {
	strict := newRegistry(t, nil)
	err := strict.Validate("billing.invoice.v1", []byte(`{}`))
	if !errors.Is(err, ErrUnknownPayloadType) || protocol.CodeOf(err) != protocol.CodeValidation || !strings.Contains(err.Error(), "billing.invoice.v1") {
		t.Fatalf("strict: %v", err)
	}
	if err := strict.Validate("not a type", []byte(`{}`)); !errors.Is(err, ErrInvalidPayloadType) {
		t.Fatalf("malformed: %v", err)
	}

	lax := newRegistry(t, &Options{Permissive: true})
	if err := lax.Validate("billing.invoice.v1", []byte(`{"anything":1}`)); err != nil {
		t.Fatalf("permissive: %v", err)
	}
	// Still JSON, still bounded, still well named.
	if err := lax.Validate("billing.invoice.v1", []byte(`{`)); !errors.Is(err, ErrInvalidJSON) {
		t.Fatalf("permissive, bad JSON: %v", err)
	}
	if err := lax.Validate("not a type", []byte(`{}`)); !errors.Is(err, ErrInvalidPayloadType) {
		t.Fatalf("permissive, malformed: %v", err)
	}
	// Known types are still enforced.
	validationErr(t, lax.Validate(PayloadResearchSummary, []byte(`{}`)))
}

func TestValidateMessage(t *testing.T) {
	reg := newRegistry(t, nil)
	lax := newRegistry(t, &Options{Permissive: true})
	const summary = `{"title":"t","findings":["f"],"citations":["c"]}`
	ref := "schema://clutch/research/summary@1"

	ok := []*protocol.Message{
		message(PayloadResearchSummary, summary),
		func() *protocol.Message { m := message(PayloadResearchSummary, summary); m.SchemaRef = ref; return m }(),
		func() *protocol.Message { m := message("", summary); m.SchemaRef = ref; return m }(),
		message("", `"free text, no contract"`),
	}
	for i, m := range ok {
		if err := reg.ValidateMessage(m); err != nil {
			t.Errorf("ok[%d]: %v", i, err)
		}
	}

	// Violations are reported relative to the message.
	ve := validationErr(t, reg.ValidateMessage(message(PayloadResearchSummary, `{"findings":[1],"citations":[]}`)))
	if !hasViolation(ve, "/payload/findings/0", "type") || ve.PayloadType != PayloadResearchSummary {
		t.Fatal(ve)
	}
	// schema_ref without payload_type stands for its payload type.
	m := message("", `{"findings":[]}`)
	m.SchemaRef = ref
	ve = validationErr(t, reg.ValidateMessage(m))
	if !hasViolation(ve, "/payload/citations", "required") {
		t.Fatal(ve)
	}

	bad := []struct {
		name       string
		m          *protocol.Message
		registry   *Registry
		want       error
		code       protocol.Code
		messageHas string
	}{
		{"ref_mismatch_version", func() *protocol.Message {
			m := message(PayloadResearchSummary, summary)
			m.SchemaRef = "schema://clutch/research/summary@2"
			return m
		}(), reg, ErrSchemaRefMismatch, protocol.CodeInvalidField, "schema://clutch/research/summary@1"},
		{"ref_mismatch_type", func() *protocol.Message {
			m := message(PayloadResearchSummary, summary)
			m.SchemaRef = "schema://clutch/code/output@1"
			return m
		}(), reg, ErrSchemaRefMismatch, protocol.CodeInvalidField, "code/output"},
		{"ref_mismatch_permissive", func() *protocol.Message {
			m := message("billing.invoice.v1", `{}`)
			m.SchemaRef = "schema://acme/invoice@1"
			return m
		}(), lax, ErrSchemaRefMismatch, protocol.CodeInvalidField, "billing.invoice.v1"},
		{"unknown", message("billing.invoice.v1", `{}`), reg, ErrUnknownPayloadType, protocol.CodeValidation, "billing.invoice.v1"},
		{"unknown_ref", func() *protocol.Message { m := message("", `{}`); m.SchemaRef = "schema://acme/invoice@1"; return m }(), reg, ErrUnknownPayloadType, protocol.CodeValidation, "schema://acme/invoice@1"},
		{"malformed_type", message("summary", summary), reg, ErrInvalidPayloadType, protocol.CodeInvalidField, "summary"},
		{"bad_json", message(PayloadResearchSummary, `{"findings":`), reg, ErrInvalidJSON, protocol.CodeInvalidJSON, "invalid JSON"},
		{"bad_json_permissive", message("billing.invoice.v1", `nope`), lax, ErrInvalidJSON, protocol.CodeInvalidJSON, "invalid JSON"},
		{"nil", nil, reg, ErrInvalidOptions, protocol.CodeInvalidField, "nil message"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			err := c.registry.ValidateMessage(c.m)
			if !errors.Is(err, c.want) || protocol.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.messageHas) {
				t.Fatalf("got %v (code %s)", err, protocol.CodeOf(err))
			}
		})
	}
	// Permissive: unknown type with a matching (or absent) schema_ref passes.
	m = message("billing.invoice.v1", `{"x":1}`)
	m.SchemaRef = "schema://clutch/billing/invoice@1"
	if err := lax.ValidateMessage(m); err != nil {
		t.Fatal(err)
	}
	m = message("", `{}`)
	m.SchemaRef = "schema://acme/invoice@1"
	if err := lax.ValidateMessage(m); err != nil {
		t.Fatal(err)
	}
}

// TestSchemaRefAgreement: a schema_ref is refused exactly when it is not
// protocol.SchemaRefFor of the payload_type, for registered payload types
// and unknown ones, in strict and permissive registries.
func TestSchemaRefAgreement(t *testing.T) {
	strict := newRegistry(t, nil)
	lax := newRegistry(t, &Options{Permissive: true})
	types := append(Builtins(), "a.b.v1", "a.b.c.v10", "x-y.z_w.v0")
	refs := []string{"", "schema://clutch/", "schema://clutch/research/summary@1", "schema://clutch/research/summary@10",
		"schema://clutch/research.summary@1", "schema://acme/research/summary@1", "schema://clutch/a@1", "schema://clutch/a/b/c@10",
		"schema://clutch/x-y/z_w@0", "schema://clutch/research/summary1", "schema://clutch/code/output@1", "schema://clutch/a/b/c@1"}
	for _, pt := range types {
		refs = append(refs, protocol.SchemaRefFor(pt))
	}
	for _, reg := range []*Registry{strict, lax} {
		for _, pt := range types {
			for _, ref := range refs {
				m := message(pt, `{}`)
				m.SchemaRef = ref
				err := reg.ValidateMessage(m)
				if got, want := errors.Is(err, ErrSchemaRefMismatch), ref != "" && ref != protocol.SchemaRefFor(pt); got != want {
					t.Errorf("permissive %v, payload_type %q, schema_ref %q: %v", reg.Permissive(), pt, ref, err)
				}
			}
		}
	}
}

func TestPayloadTypeForRef(t *testing.T) {
	for ref, want := range map[string]string{
		"schema://clutch/research/summary@1":  "research.summary.v1",
		"schema://clutch/a/b/c@12":            "a.b.c.v12",
		"schema://acme/research/summary@1":    "",
		"schema://clutch/research/summary":    "",
		"schema://clutch/summary@1":           "", // no domain
		"schema://clutch/research/summary@x":  "",
		"schema://clutch/research//summary@1": "",
		"schema://clutch/re.search/summary@1": "",
	} {
		if got := payloadTypeForRef(ref); got != want {
			t.Errorf("payloadTypeForRef(%q) = %q, want %q", ref, got, want)
		}
	}
	for _, pt := range Builtins() {
		if got := payloadTypeForRef(protocol.SchemaRefFor(pt)); got != pt {
			t.Errorf("round trip of %s gives %q", pt, got)
		}
	}
}

// Types for reflection tests: a violation deep in a nested type is caught.
type order struct {
	ID       string            `json:"id"`
	Customer customer          `json:"customer"`
	Lines    []orderLine       `json:"lines" jsonschema:"minItems=1"`
	Notes    *string           `json:"notes,omitempty"`
	Tags     map[string]string `json:"tags,omitempty"`
}

type customer struct {
	Name    string  `json:"name"`
	Address address `json:"address"`
}

type address struct {
	City    string `json:"city"`
	Country string `json:"country" jsonschema:"pattern=^[A-Z]{2}$"`
}

type orderLine struct {
	SKU      string   `json:"sku"`
	Quantity int      `json:"quantity" jsonschema:"minimum=1"`
	Price    float64  `json:"price"`
	Product  *product `json:"product,omitempty"`
}

type product struct {
	Name string   `json:"name"`
	Of   *product `json:"of,omitempty"` // recursive: a $ref cycle through a property
}

func TestRegisterTypeNested(t *testing.T) {
	reg := newRegistry(t, nil)
	if err := RegisterType[order](reg, "shop.order.v1"); err != nil {
		t.Fatal(err)
	}
	s, _ := reg.Lookup("shop.order.v1")
	if s.GoType() != reflect.TypeFor[order]() {
		t.Fatalf("GoType = %v", s.GoType())
	}
	valid := order{ID: "o1", Customer: customer{Name: "Ada", Address: address{City: "London", Country: "GB"}},
		Lines: []orderLine{{SKU: "x", Quantity: 2, Price: 1.5, Product: &product{Name: "p", Of: &product{Name: "q"}}}}}
	if err := reg.Validate("shop.order.v1", mustJSON(t, valid)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, payload, path, keyword string
	}{
		{"deep_pattern", `{"id":"o","customer":{"name":"A","address":{"city":"L","country":"gb"}},"lines":[{"sku":"x","quantity":1,"price":1}]}`, "/customer/address/country", "pattern"},
		{"deep_required", `{"id":"o","customer":{"name":"A","address":{"city":"L"}},"lines":[{"sku":"x","quantity":1,"price":1}]}`, "/customer/address/country", "required"},
		{"deep_extra", `{"id":"o","customer":{"name":"A","address":{"city":"L","country":"GB","zip":"1"}},"lines":[{"sku":"x","quantity":1,"price":1}]}`, "/customer/address/zip", "additionalProperties"},
		{"array_item", `{"id":"o","customer":{"name":"A","address":{"city":"L","country":"GB"}},"lines":[{"sku":"x","quantity":0,"price":1}]}`, "/lines/0/quantity", "minimum"},
		{"recursive", `{"id":"o","customer":{"name":"A","address":{"city":"L","country":"GB"}},"lines":[{"sku":"x","quantity":1,"price":1,"product":{"name":"p","of":{"name":3}}}]}`, "/lines/0/product/of/name", "type"},
		{"min_items", `{"id":"o","customer":{"name":"A","address":{"city":"L","country":"GB"}},"lines":[]}`, "/lines", "minItems"},
		{"map_value", `{"id":"o","customer":{"name":"A","address":{"city":"L","country":"GB"}},"lines":[{"sku":"x","quantity":1,"price":1}],"tags":{"a":1}}`, "/tags/a", "type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ve := validationErr(t, reg.Validate("shop.order.v1", []byte(c.payload)))
			if !hasViolation(ve, c.path, c.keyword) {
				t.Fatalf("want %s at %s, got %v", c.keyword, c.path, ve)
			}
		})
	}
}

func TestRegisterTypeErrors(t *testing.T) {
	reg := newRegistry(t, nil)
	// invopop panics on a channel; the panic becomes an error.
	type withChan struct {
		C chan int `json:"c"`
	}
	err := RegisterType[withChan](reg, "test.chan.v1")
	if !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), "cannot reflect") {
		t.Fatalf("chan: %v", err)
	}
	if err := RegisterType[int](reg, "bad"); !errors.Is(err, ErrInvalidPayloadType) {
		t.Fatalf("bad name: %v", err)
	}

	// A Reflector that emits $anchor is refused like hand-written JSON.
	anch := newRegistry(t, &Options{NoBuiltins: true, Reflector: &jsonschema.Reflector{AssignAnchor: true, Anonymous: true}})
	err = RegisterType[ResearchSummary](anch, PayloadResearchSummary)
	se := schemaErr(t, err, ErrUnsupportedKeyword)
	if se.Keyword != "$anchor" {
		t.Fatalf("got %v", se)
	}
	// The default (non-anonymous) invopop Reflector emits an $id and a root
	// $ref; it still works.
	plain := newRegistry(t, &Options{NoBuiltins: true, Reflector: &jsonschema.Reflector{}})
	if err := RegisterType[order](plain, "shop.order.v1"); err != nil {
		t.Fatal(err)
	}
	ve := validationErr(t, plain.Validate("shop.order.v1", []byte(`{"id":"o","customer":{"name":"A","address":{"city":"L","country":"gb"}},"lines":[{"sku":"x","quantity":1,"price":1}]}`)))
	if !hasViolation(ve, "/customer/address/country", "pattern") {
		t.Fatal(ve)
	}
}

// Registering while validating: readers never block and always see a
// consistent registry. Run with -race.
func TestConcurrentRegisterAndValidate(t *testing.T) {
	reg := newRegistry(t, nil)
	const writers, perWriter, readers = 4, 50, 8
	payload := []byte(`{"findings":["a"],"citations":["b"]}`)
	bad := []byte(`{"findings":"a"}`)
	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter+readers)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				pt := fmt.Sprintf("load.w%d.v%d", w, i+1)
				var err error
				if i%2 == 0 {
					err = reg.Register(pt, []byte(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`))
				} else {
					err = RegisterType[ResearchQuery](reg, pt)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	// Two writers race for the same name: exactly one wins.
	var dupWins sync.WaitGroup
	var wins, losses int32
	var mu sync.Mutex
	for range 2 {
		dupWins.Go(func() {
			err := reg.Register("load.same.v1", []byte(`{}`))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, ErrAlreadyRegistered):
				losses++
			default:
				errs <- err
			}
		})
	}
	for range readers {
		wg.Go(func() {
			for i := range 300 {
				if err := reg.Validate(PayloadResearchSummary, payload); err != nil {
					errs <- err
					return
				}
				if err := reg.Validate(PayloadResearchSummary, bad); !errors.Is(err, ErrValidation) {
					errs <- fmt.Errorf("bad payload: %v", err)
					return
				}
				// A type being registered is either unknown or complete.
				pt := fmt.Sprintf("load.w%d.v%d", i%writers, 1+i%perWriter)
				err := reg.Validate(pt, []byte(`{"n":1}`))
				if err != nil && !errors.Is(err, ErrUnknownPayloadType) && !errors.Is(err, ErrValidation) {
					errs <- err
					return
				}
				_ = reg.List()
			}
		})
	}
	wg.Wait()
	dupWins.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if wins != 1 || losses != 1 {
		t.Fatalf("same name: %d wins, %d losses", wins, losses)
	}
	if want := len(Builtins()) + writers*perWriter + 1; reg.Len() != want {
		t.Fatalf("Len = %d, want %d", reg.Len(), want)
	}
}

// A Schema can be used on its own after Lookup.
func TestSchemaValidate(t *testing.T) {
	reg := newRegistry(t, &Options{MaxPayloadBytes: 16})
	s, _ := reg.Lookup(PayloadResearchQuery)
	if err := s.Validate([]byte(`{"query":"q"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate([]byte(`{"query":"quite long"}`)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("limit not applied: %v", err)
	}
	ve := validationErr(t, s.Validate([]byte(`{}`)))
	if !hasViolation(ve, "/query", "required") {
		t.Fatal(ve)
	}
	var raw json.RawMessage = s.JSON()
	if !json.Valid(raw) {
		t.Fatal("JSON() is not JSON")
	}
}
