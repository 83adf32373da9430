// Package schema is the payload schema registry of Clutch: it maps each
// payload_type to a JSON Schema, validates payloads and messages against it,
// and scopes validation to workflows. "domain + payload_type + schema
// registry prevents unstructured prompt soup" (docs/protocol.md, "What Clutch
// Protocol Adds"); "validation is workflow-scoped, not global" (§3.1).
//
// # Basics
//
// A [Registry] holds compiled schemas, one per payload_type. [New] makes one
// with the built-in payload types of docs/protocol.md §3.3 plus research.query.v1
// (§10), each with an exported Go type ([ResearchSummary], [CodeOutput],
// ...) to build payloads from:
//
//	reg, err := schema.New(nil) // nil Options: defaults, built-ins included
//	err = reg.Validate(schema.PayloadResearchSummary, payload) // raw JSON bytes
//	err = reg.ValidateMessage(msg) // payload_type, schema_ref and payload of a *protocol.Message
//
// Register your own payload types from raw JSON with [Registry.Register] or
// from a Go type with [RegisterType], which reflects it with
// github.com/invopop/jsonschema:
//
//	err = schema.RegisterType[Invoice](reg, "billing.invoice.v1")
//
// Every payload_type has the canonical schema_ref of §3.2
// (research.summary.v1 ↔ schema://clutch/research/summary@1); a message
// whose schema_ref and payload_type disagree is refused.
//
// Workflows (§3.4) say what each step of a run must produce. Load one from
// YAML or JSON with [Registry.LoadWorkflow], and bind runs to workflows with
// a [Binder]:
//
//	wf, err := reg.LoadWorkflow(yamlBytes)
//	binder := schema.NewBinder(reg)
//	err = binder.Bind(runID, wf)
//	err = binder.ValidateMessage(msg) // the run's step rules, or the registry alone
//
// A message of a bound run answers the step named in its meta ("step",
// [protocol.MetaStep]), or else the step whose expects.type and
// expects.payload_type match it; see [Workflow.StepFor] for the exact rule
// and [Binder] for the one exception, a task.request naming the step its
// result answers.
//
// [Registry.ValidateMessage] and [Binder.ValidateMessage] have the
// signature of a router's validator (router.Options.Validator), so either
// is given to a router as it is: a Registry validates against payload
// schemas alone, a Binder in the scope of each message's run.
// [RegistryOf] returns the registry behind such a validator, for code that
// registers payload types with a router's (router.Router.Validator).
//
// # Validation
//
// Every payload is validated by github.com/xeipuuv/gojsonschema v1.2.0,
// the one JSON Schema engine of the package, against a schema compiled
// once, when it is registered. A payload is read as JSON once (by the
// envelope's strict reader, protocol.Decoder.DecodeValue, numbers kept
// exactly), and that value is what gojsonschema validates and what a workflow step's expects.required
// members are looked up in. The registry is a copy-on-write map behind an
// atomic pointer: validation never locks, and registering does not block
// it. No call does I/O or waits, so none takes a context.
//
// Workflow files are read with go.yaml.in/yaml/v3 (the maintained
// continuation of gopkg.in/yaml.v3), whose node tree keeps the line and
// column of every key and value, so that each problem of a workflow is
// reported with its position and field. JSON workflows are read by the
// same code; their syntax errors are reported by encoding/json, with line
// and column.
//
// # Errors
//
// Every error of the package wraps or matches one of its sentinel errors
// ([ErrValidation], [ErrInvalidJSON], ...), so errors.Is works, and carries
// a [protocol.Code] that [protocol.CodeOf] reads, so the router can put any
// of them on the wire. Detail comes in typed errors:
//   - [*ValidationError] (matches [ErrValidation] and
//     protocol.CodeValidation): the payload_type and every [Violation],
//     each with a JSON pointer path, the JSON Schema keyword and a message;
//   - [*SchemaError]: why a schema was refused at registration, with the
//     JSON pointer into the schema and the keyword ([ErrUnsupportedKeyword],
//     [ErrRemoteRef], [ErrRefCycle], [ErrInvalidSchema]);
//   - [*WorkflowError] (matches [ErrInvalidWorkflow]): every problem of a
//     workflow with line, column and field.
//
// A payload that is not one JSON value gives [ErrInvalidJSON]; one over
// [Options].MaxPayloadBytes (1 MiB by default), or holding a number literal
// longer than 256 characters or with an exponent beyond ±1000, gives
// [ErrTooLarge] (gojsonschema computes with every number exactly, and such
// numbers would cost it seconds of CPU); an unregistered payload_type
// gives [ErrUnknownPayloadType] unless [Options].Permissive is set. Nothing in the package panics on bad input:
// panics inside gojsonschema, invopop/jsonschema or the YAML parser are
// recovered and returned as errors ([ErrInternal], [ErrInvalidSchema]).
//
// # Caveats
//
// Validation uses github.com/xeipuuv/gojsonschema v1.2.0, which implements
// JSON Schema drafts 4, 6 and 7. It ignores newer keywords (so a payload
// breaking them would pass), and some schemas make it recurse until a fatal,
// unrecoverable stack overflow kills the process. Registration therefore
// refuses, with the keyword and its JSON pointer:
//   - the keywords of [RefusedKeywords] anywhere in the document ($anchor,
//     $dynamicRef, $dynamicAnchor, $recursiveRef, $recursiveAnchor,
//     prefixItems, dependentRequired, dependentSchemas,
//     unevaluatedProperties, unevaluatedItems, minContains, maxContains),
//     including inside unknown keywords, default and examples (only the
//     member names of properties, patternProperties, definitions, $defs and
//     dependencies, and the values of const and enum, are exempt);
//   - a $ref that is not "#" or a "#/json/pointer" resolving inside the
//     document: remote and file references (never fetched: the loader
//     handed to gojsonschema refuses every load) and anchor references;
//   - a $ref cycle that never descends into the instance, such as
//     {"$ref": "#"} or {"allOf": [{"$ref": "#"}]}, which overflows
//     gojsonschema's stack like an $anchor does;
//   - a string $id or id in a subschema below the root: gojsonschema
//     resolves "#/..." against it, which changes what references mean.
//
// gojsonschema also takes any string $id or id it meets elsewhere (at the
// root, in default, examples or unknown keywords) for a document of its own,
// and an id with a fragment ("#/definitions/a") then captures the references
// that name it, which too loops until the stack overflows. Those
// ids mean nothing for validation, so the registry drops them from the copy
// it compiles; every "#/..." then resolves against the root document, as
// the checks above assume.
//
// Unless the document declares draft 4, 6 or 7 in $schema, keywords next to
// a $ref are enforced, as drafts 2019-09 and later (and invopop) mean: the
// registry rewrites {"$ref": R, ...} into {..., "allOf": [{"$ref": R}]}
// before compiling; gojsonschema alone would ignore them. [Schema.JSON]
// returns the document as registered.
//
// Reflected schemas ([NewReflector]) have no $id, keep nested types under
// $defs, refuse unknown members ("additionalProperties": false) and require
// every field whose json tag lacks omitempty/omitzero (an optional field of
// the built-in types carries omitempty even beside omitzero: reflection
// built with invopop/jsonschema before v0.14, as in a module that uses the
// Genkit bridge, knows omitempty only). A nil slice encoded
// by encoding/json v1 is null, which fails an array schema; the built-in
// types encode nil slices as [] (encoding/json v2, used by protocol, does so
// for every type).
//
// Keywords mean what gojsonschema v1.2.0 makes of them: string lengths
// count runes, 1.0 and 1e2 are integers, numeric bounds and multipleOf are
// exact, enum and const compare numbers as float64, and format uses
// gojsonschema.FormatCheckers (a program may add its own checkers there).
//
// Payloads and schema documents are read strictly, as the envelope is: a
// duplicate member name, invalid UTF-8 or a lone surrogate escape is
// ErrInvalidJSON, never a value a second reader could read differently.
// Schemas are trusted configuration: a schema can still be slow to
// validate (nested anyOf, patternProperties compiled per call by
// gojsonschema), and only payloads are treated as hostile.
//
// A [Binder] keeps a run's binding until [Binder.Unbind]: its owner unbinds
// a run when the run is over; the router does not.
package schema
