package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/invopop/jsonschema"
	"github.com/xeipuuv/gojsonschema"

	"github.com/clutchprotocol/clutch/protocol"
)

// DefaultMaxPayloadBytes is the payload size limit when
// [Options].MaxPayloadBytes is 0: the same 1 MiB as the protocol decoder.
const DefaultMaxPayloadBytes = protocol.DefaultMaxBytes

// MaxSchemaBytes is the largest schema document accepted by
// [Registry.Register].
const MaxSchemaBytes = 4 << 20

// Options configures a [Registry]. A nil *Options means the defaults.
type Options struct {
	// Permissive makes a payload_type with no registered schema pass
	// validation instead of failing with [ErrUnknownPayloadType]. The form
	// of the payload_type, the schema_ref agreement and the payload's JSON
	// syntax and size are still checked. Workflows are never permissive:
	// a step naming an unknown payload_type is refused when loaded.
	Permissive bool

	// MaxPayloadBytes is the largest payload validated; a larger one is
	// refused with [ErrTooLarge]. 0 means [DefaultMaxPayloadBytes].
	MaxPayloadBytes int

	// NoBuiltins leaves out the built-in payload types of docs/protocol.md §3.3 and
	// research.query.v1 (see [Builtins]), which are registered by default.
	NoBuiltins bool

	// Reflector is used by [RegisterType] to turn Go types into schemas. nil
	// means [NewReflector]. Whatever it emits goes through the same checks
	// as a schema registered from JSON.
	Reflector *jsonschema.Reflector
}

// Registry maps payload types to compiled JSON Schemas (docs/protocol.md §3). It is
// safe for use by many goroutines: validation reads an immutable snapshot
// through an atomic pointer and never takes a lock; registration compiles
// outside any lock, then copies the snapshot and swaps it in under a mutex
// that only other registrations wait for. Make one with [New]; the zero
// value is not usable.
type Registry struct {
	permissive bool
	maxBytes   int
	reflector  *jsonschema.Reflector
	reflectMu  sync.Mutex // invopop's Reflector is not documented as concurrency-safe

	mu   sync.Mutex // serializes writers
	snap atomic.Pointer[map[string]*Schema]
}

// New returns a registry configured by opts (nil for the defaults), holding
// the built-in payload types unless opts.NoBuiltins is set.
func New(opts *Options) (*Registry, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxPayloadBytes < 0 {
		return nil, errorf(ErrInvalidOptions, "MaxPayloadBytes is %d", o.MaxPayloadBytes)
	}
	if o.MaxPayloadBytes == 0 {
		o.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if o.Reflector == nil {
		o.Reflector = NewReflector()
	}
	r := &Registry{permissive: o.Permissive, maxBytes: o.MaxPayloadBytes, reflector: o.Reflector}
	empty := map[string]*Schema{}
	r.snap.Store(&empty)
	if !o.NoBuiltins {
		if err := registerBuiltins(r); err != nil {
			return nil, fmt.Errorf("schema: registering built-in payload types: %w", err)
		}
	}
	return r, nil
}

// NewReflector returns the invopop/jsonschema Reflector that [RegisterType]
// uses by default. It emits schemas that gojsonschema enforces completely:
//   - no $id (Anonymous), so every $ref is a local "#/$defs/..." fragment;
//   - the root type expanded in place (ExpandedStruct), nested named types
//     under $defs referenced with $ref, which gojsonschema resolves;
//   - "additionalProperties": false on every struct, so a misspelt member
//     is a violation rather than silently dropped;
//   - a field is required unless its json tag has omitempty or omitzero.
//
// Do not set AssignAnchor: $anchor is refused (see the package doc).
func NewReflector() *jsonschema.Reflector {
	return &jsonschema.Reflector{Anonymous: true, ExpandedStruct: true}
}

// Schema is a registered, compiled schema. It is immutable and safe for use
// by many goroutines.
type Schema struct {
	payloadType string
	ref         string
	raw         []byte
	goType      reflect.Type
	compiled    *gojsonschema.Schema
	maxBytes    int
	rootProps   map[string]bool
	rootClosed  bool
}

// PayloadType returns the payload_type the schema is registered for
// ("research.summary.v1").
func (s *Schema) PayloadType() string { return s.payloadType }

// Ref returns the schema_ref of the payload type (docs/protocol.md §3.2):
// "schema://clutch/research/summary@1".
func (s *Schema) Ref() string { return s.ref }

// JSON returns a copy of the schema document as registered (for a Go type,
// as reflected), before the normalization described in the package doc.
func (s *Schema) JSON() []byte { return append([]byte(nil), s.raw...) }

// GoType returns the Go type the schema was reflected from, or nil for a
// schema registered from JSON.
func (s *Schema) GoType() reflect.Type { return s.goType }

// Register compiles a JSON Schema (raw JSON) and registers it for
// payloadType. The schema is refused, with a [*SchemaError], when it is not
// valid JSON, uses a keyword of [RefusedKeywords] anywhere, has a $ref that
// is not a local "#/..." pointer resolving inside the document, has a $ref
// cycle that does not descend into the instance, has an $id inside a
// subschema, is nested deeper than 256 levels, or does not compile (see the
// package doc, "Caveats").
// Registering a payload_type twice fails with [ErrAlreadyRegistered].
func (r *Registry) Register(payloadType string, schemaJSON []byte) error {
	return r.register(payloadType, schemaJSON, nil)
}

// RegisterType reflects T into a JSON Schema with the registry's Reflector
// (see [NewReflector]) and registers it for payloadType, like
// [Registry.Register]. T is normally a struct; its json tags name the
// members, and members without omitempty are required.
func RegisterType[T any](r *Registry, payloadType string) error {
	return r.registerType(payloadType, reflect.TypeFor[T]())
}

func (r *Registry) registerType(payloadType string, t reflect.Type) error {
	if err := r.checkNew(payloadType); err != nil {
		return err
	}
	data, err := r.reflect(payloadType, t)
	if err != nil {
		return err
	}
	return r.register(payloadType, data, t)
}

func (r *Registry) reflect(payloadType string, t reflect.Type) (data []byte, err error) {
	r.reflectMu.Lock()
	defer r.reflectMu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			data, err = nil, &SchemaError{PayloadType: payloadType, Detail: fmt.Sprintf("cannot reflect Go type %v: %v", t, p), Err: ErrInvalidSchema}
		}
	}()
	js := r.reflector.ReflectFromType(t)
	data, err = json.Marshal(js)
	if err != nil {
		return nil, &SchemaError{PayloadType: payloadType, Detail: fmt.Sprintf("cannot encode the schema of Go type %v: %v", t, err), Err: ErrInvalidSchema}
	}
	return data, nil
}

// checkNew validates the form of payloadType and that it is free.
func (r *Registry) checkNew(payloadType string) error {
	if !protocol.ValidPayloadType(payloadType) {
		return errorf(ErrInvalidPayloadType, "payload type %q is not of the form <domain>.<name>.v<N>", payloadType)
	}
	if _, dup := (*r.snap.Load())[payloadType]; dup {
		return errorf(ErrAlreadyRegistered, "%s", payloadType)
	}
	return nil
}

func (r *Registry) register(payloadType string, data []byte, t reflect.Type) error {
	if err := r.checkNew(payloadType); err != nil {
		return err
	}
	if len(data) > MaxSchemaBytes {
		return errorf(ErrTooLarge, "%s: schema is %d bytes, limit %d", payloadType, len(data), MaxSchemaBytes)
	}
	pr, err := prepareSchema(payloadType, data)
	if err != nil {
		return err
	}
	compiled, err := compile(payloadType, pr.doc)
	if err != nil {
		return err
	}
	s := &Schema{
		payloadType: payloadType,
		ref:         protocol.SchemaRefFor(payloadType),
		raw:         append([]byte(nil), data...),
		goType:      t,
		compiled:    compiled,
		maxBytes:    r.maxBytes,
		rootProps:   pr.rootProps,
		rootClosed:  pr.rootClosed,
	}
	// Copy on write: readers keep using the old map until the swap.
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.snap.Load()
	if _, dup := old[payloadType]; dup {
		return errorf(ErrAlreadyRegistered, "%s", payloadType)
	}
	next := maps.Clone(old)
	next[payloadType] = s
	r.snap.Store(&next)
	return nil
}

// Lookup returns the schema registered for payloadType.
func (r *Registry) Lookup(payloadType string) (*Schema, bool) {
	s, ok := (*r.snap.Load())[payloadType]
	return s, ok
}

// List returns every registered schema, sorted by payload type.
func (r *Registry) List() []*Schema {
	m := *r.snap.Load()
	out := make([]*Schema, 0, len(m))
	for _, s := range m {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].payloadType < out[j].payloadType })
	return out
}

// Len returns the number of registered schemas.
func (r *Registry) Len() int { return len(*r.snap.Load()) }

// Permissive reports whether unknown payload types pass validation.
func (r *Registry) Permissive() bool { return r.permissive }
