// Package genkit brings flows built with Firebase Genkit for Go
// (github.com/firebase/genkit/go) into a Clutch team in the same binary,
// and gives them the team as a tool.
//
// Genkit's own package is also called genkit, so import this one under
// another name:
//
//	import (
//		"github.com/firebase/genkit/go/genkit"
//		clutchgenkit "github.com/clutchprotocol/clutch/adapters/genkit"
//	)
//
// It is a nested Go module (its own go.mod), so `go get` of Clutch never
// pulls Genkit's dependencies. It needs Genkit v1.4.0. Genkit's prompt
// library (github.com/google/dotprompt) builds only with
// github.com/invopop/jsonschema v0.13.0, while Clutch requires v0.14.0
// (their ordered maps differ); the module's go.mod replaces it with
// v0.13.0, and an application that imports this package must add the
// same line to its own go.mod, since Go ignores the replace directives of
// dependencies:
//
//	replace github.com/invopop/jsonschema => github.com/invopop/jsonschema v0.13.0
//
// With v0.13.0, package schema's Go-type reflection takes a field tagged
// omitzero alone as required (v0.14 does not). Clutch's built-in payload
// types tag their optional fields omitempty as well, so they read the same
// with either version; a payload type of the application whose optional
// fields are tagged omitzero only must add omitempty too.
//
// # Basics
//
// [New] wraps a Genkit flow (*core.Flow[In, Out, Stream], from
// genkit.DefineFlow or DefineStreamingFlow) as a Clutch agent; register it
// with its card:
//
//	flow := genkit.DefineFlow(g, "forecaster", func(ctx context.Context, q string) (string, error) {
//		resp, err := clutchgenkit.Generate(ctx, g, ai.WithPrompt(q), ai.WithTools(weather))
//		...
//	})
//	a, _ := clutchgenkit.New("agent:forecaster", flow, &clutchgenkit.Options{Tools: []ai.Tool{weather}, Store: r.Store()})
//	r.Register(ctx, a.Card(), a.Handle)
//
// The card has the agent's name (default the flow's) and description, one
// capability "skill:<name>" (or Options.Capabilities) and the flow's
// tools as the capability's tools ("genkit:<tool name>"). Handle decodes
// the task.request payload into the flow's input, runs the flow (Run, or
// Stream with Options.Stream) and makes its output the result.
//
// [Tool] is the other way round: a capability of the team as a Genkit
// tool (ai.Tool), so a flow's model can delegate to the team. Inside a
// task of the bridge (router.TaskFrom(ctx) != nil) a call is a subtask of
// that task — a routing decision, the run's budget, its cancellation and
// trace come with it; elsewhere it submits a root task and waits for it.
//
// [Generate] is genkit.Generate that turns a tool's interrupt into a
// durable question (below); outside a task of the bridge it is
// genkit.Generate.
//
// # Mapping
//
// Genkit traces every action it runs — flow, generate loop, model call,
// tool call — as an OpenTelemetry span of its tracer provider, started in
// its caller's context. The bridge registers one span processor there
// (once per process, again if the global provider is replaced) and
// records the spans whose context is a run of the bridge as events of the
// task (docs/protocol.md §2.3, §2.3.2). A flow needs no change for this:
//
//	Genkit                                  Clutch
//	request payload: JSON string, {"text"}  the flow's input, when it is a string
//	request payload, other JSON             decoded into the input type In
//	output *ai.ModelResponse                result payload: its text
//	output string / other Out               the string / Out as JSON
//	model span (subtype model)              one x.clutch.model_call at its end:
//	                                        model and provider (the name
//	                                        "provider/model"), usage (input,
//	                                        output, total tokens), finish
//	                                        reason, tool requests, duration
//	tool span (subtype tool.v2)             tool.call {call_id, tool "genkit",
//	                                        name, args} at its start, args
//	                                        being the model's tool request;
//	                                        tool.result {content: the output}
//	                                        or tool.error at its end, the
//	                                        same call_id
//	a tool span without Genkit's state      tool.error INTERNAL (the tool
//	(the tool panicked)                     panicked); a model span so: the
//	                                        model call's error INTERNAL
//	a tool's interrupt                      tool.error INPUT_REQUIRED
//	                                        {interrupted, interrupt: its
//	                                        metadata}; Generate asks
//	Stream values                           task.progress {"text"}: strings and
//	                                        *ai.ModelResponseChunk text, each
//	                                        at least Options.ProgressBytes
//	                                        (default 64) — tiny deltas are
//	                                        gathered, never split inside a
//	                                        character, what is left goes when
//	                                        the stream ends; any other value
//	                                        is one task.progress {"value"}
//	a tool's failure                        task.error TOOL_FAILED (details:
//	                                        tool, name, call_id, cause_code)
//	a model's failure                       task.error DEPENDENCY (retryable)
//	other flow errors                       by Genkit status: INVALID_ARGUMENT
//	                                        VALIDATION, NOT_FOUND NOT_FOUND,
//	                                        DEADLINE_EXCEEDED TIMEOUT, ABORTED
//	                                        (out of turns) BUDGET,
//	                                        UNAVAILABLE DEPENDENCY, ...; else
//	                                        INTERNAL
//	task cancelled                          the flow's ctx ends: it stops,
//	                                        task.cancel
//
// What is lost: spans of other actions (the flow's own, flow steps,
// retrievers, embedders) are not recorded; the model's messages
// themselves are not events, only the call's numbers; Genkit's tool
// request refs are not kept — the call id is the tool.call event's own
// id; a tool's error reaches Clutch as its text (the span's status), so
// its tool.error is INTERNAL with that text — but for a [Tool], which
// hands its wire error (the subtask's code) to the bridge; when a model asks for the
// same tool twice in one turn with different arguments, Genkit runs both
// at once and its spans do not say which is which, so their tool.call
// events leave args out. A tool restarted on resume runs outside a model
// turn: its tool.call and outcome are both recorded at its end. A model
// or tool call in flight when the task is cancelled or times out is not
// given an outcome: the task has ended, and the router takes no more of
// its events. Spans that the tracer provider's sampler drops are not
// seen, so keep Genkit's default (every span recorded).
//
// # Interrupts
//
// A tool that interrupts (ToolContext.Interrupt) makes genkit.Generate
// return a response whose finish reason is "interrupted". [Generate], used
// in its place in the flow, makes that a question of the task
// (router.Task.Ask): its text is each interrupt's metadata (a string, or
// an object's "question", "message" or "text"), else which tools paused;
// its details hold the interrupted requests (name, ref, input, metadata)
// and genkit_checkpoint_ref, an artifact ([CheckpointMediaType]) in
// Options.Store with the conversation up to the interrupted turn and the
// responses of the flow's earlier Generate calls. The task then waits,
// holding no goroutine.
//
// When a person answers (router.Router.Answer), Handle runs the flow
// again; it finds the answered question with router.Task.Resumed and
// reads the checkpoint. Generate calls before the interrupted one return
// their recorded responses without calling the model; the interrupted one
// goes on from the checkpoint — genkit.Generate with the conversation,
// its tools, config and tool choice, and WithToolRestarts or
// WithToolResponses; later ones run as usual. By default the interrupted
// tool runs again with ToolContext.Resumed {"answer": <the answer>};
// Options.Resume chooses otherwise (ToolDef.RespondWith makes the answer
// the tool's output). Because the ref is in the task's log, any process
// on the same store resumes it. Without Options.Store, in a subtask
// (which cannot ask), when the flow called genkit.Generate itself, or
// when a tool restarted on resume interrupts again (Genkit refuses to go
// on from that), an interrupt ends the task with INPUT_REQUIRED whose
// details say why (not_resumable, not_asked). A tool that interrupts in
// a later model turn of the resumed loop asks a new question as usual.
//
// # Errors
//
// New and Tool fail with [ErrOptions] (INVALID_FIELD); a request that does
// not decode into the flow's input fails with [ErrInput] (VALIDATION).
//
// # Caveats
//
// A flow resumed after a question must make the same Generate calls in
// the same order, one after another, and must not repeat side effects it
// took before them (router.Task.Ask's contract). The resumed Generate
// call is rebuilt from the checkpoint: its model, conversation, tools (by
// name: tools must be registered — genkit.DefineTool, or
// genkit.RegisterAction for a Tool), config and tool choice; the flow's
// other options for that one call (streaming callback, middleware, max
// turns, output format) are not applied to it, and a typed config comes
// back as its JSON. Options.Tools only lists tools on the card: the flow
// passes its tools to Generate itself.
//
// Genkit recovers no panic: a tool that panics in a generate loop (which
// runs each tool request in its own goroutine) ends the process, after
// the bridge has stored the call's tool.error INTERNAL.
//
// # Overhead
//
// BenchmarkToolLoopDirect and BenchmarkToolLoopBridge run the same flow
// (a model call, a tool call, a model call) with the same fake model,
// directly and as a Clutch task on memstore; the difference is the
// bridge's cost (the span processor and the events it stores).
package genkit
