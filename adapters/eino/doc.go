// Package eino brings agents built with CloudWeGo eino
// (github.com/cloudwego/eino) into a Clutch team in the same binary, and
// gives them the team as a tool.
//
// It is a nested Go module (its own go.mod), so `go get` of Clutch never
// pulls eino's dependencies; it needs eino v0.7.36 and, on Go 1.26,
// github.com/bytedance/sonic v1.15 or later, which its go.mod pins.
//
// # Basics
//
// [New] wraps a compiled eino runnable (compose.Runnable[I, O]: a Graph,
// Chain or Workflow; eino's ReAct agent through its ExportGraph) as a
// Clutch agent; register it with its card:
//
//	g, _ := chain.Compile(ctx)
//	a, _ := eino.New("agent:forecaster", g, &eino.Options{Tools: tools})
//	r.Register(ctx, a.Card(), a.Handle)
//
// The card has the agent's name and description, one capability
// "skill:<name>" (or Options.Capabilities) and the graph's tools as the
// capability's tools ("eino:<tool name>"). Handle decodes the
// task.request payload into the graph's input, runs the graph (Invoke, or
// Stream with Options.Stream) and makes its output the result.
//
// [Tool] is the other way round: a capability of the team as an eino
// tool.InvokableTool, so a graph's model can delegate to the team.
// Inside a task of the bridge (router.TaskFrom(ctx) != nil) a call is a
// subtask of that task — a routing decision, the run's budget, its
// cancellation and trace come with it; elsewhere it submits a root task
// and waits for it.
//
// # Mapping
//
// The bridge hooks into eino's own callback mechanism: every run gets a
// callbacks.Handler (compose.WithCallbacks) for its model and tool
// components, whose OnStart, OnEnd, OnError and OnEndWithStreamOutput
// record events of the task (docs/protocol.md §2.3, §2.3.2):
//
//	eino                                   Clutch
//	request payload: JSON string, {"text"}  a user message ([]*schema.Message,
//	                                       *schema.Message input), the string
//	                                       (string input)
//	request payload, other JSON            decoded into the input type I
//	output *schema.Message                 result payload: its content (text)
//	output string / other O                the string / O as JSON
//	chat model call (OnStart..OnEnd)       one x.clutch.model_call: model
//	                                       (model.Config, else Options.Model,
//	                                       the node name), provider (the
//	                                       model's type, lower case), token
//	                                       usage, finish reason, tool calls
//	                                       asked for, duration
//	tool call (OnStart)                    tool.call {call_id, tool "eino",
//	                                       name, args}
//	tool ends (OnEnd) / fails (OnError)    tool.result {content} / tool.error,
//	                                       the same call_id
//	tool interrupts (tool.Interrupt)       tool.error INPUT_REQUIRED; the
//	                                       resumed graph calls the tool anew
//	tool panics (eino recovers it, calls   tool.error INTERNAL when the graph
//	no OnError)                            returns: every tool.call has one
//	                                       outcome
//	Stream output chunks                   task.progress {"text"}, each at
//	                                       least Options.ProgressBytes
//	                                       (default 64) of text, the last
//	                                       one what is left when the stream
//	                                       ends: tiny deltas are gathered,
//	                                       never split inside a character
//	                                       (a chunk ending in one waits for
//	                                       the next); no text is held back
//	                                       past the end
//	interrupt + checkpoint                 task.question (router.Task.Ask);
//	                                       the answer resumes the graph from
//	                                       its checkpoint
//	a tool's failure                       task.error TOOL_FAILED (details:
//	                                       name, call_id, cause_code)
//	a model's failure                      task.error DEPENDENCY (retryable)
//	task cancelled                         the run's ctx ends: the graph
//	                                       stops, task.cancel
//
// What is lost: events of other components (prompts, retrievers,
// lambdas, the graph's own start and end) are not recorded; a streamed
// tool's output is recorded joined, as one tool.result; the model's
// messages themselves (prompts, replies) are not events, only the model
// call's numbers; eino's own tool call ids (the model's) are not kept —
// the call id is the tool.call event's own id. A model or tool call in
// flight when the task is cancelled or times out is not given an
// outcome: the task has ended, and the router takes no more of its
// events.
//
// # Interrupts
//
// A graph that may interrupt — compose.WithInterruptBeforeNodes or
// WithInterruptAfterNodes at compile time, a tool returning
// tool.Interrupt or compose.Interrupt — must be compiled with a
// checkpoint store and given it in Options.CheckPoints. Use
// [NewCheckPointStore] on the router's store: the checkpoint is then
// kept in the Clutch artifact store (content-addressed,
// [CheckpointMediaType]).
//
// Each run uses the checkpoint id "clutch/<task id>". When the graph is
// interrupted, the task asks a question (router.Task.Ask): its text is
// the interrupt's info (a string, or an object's "question", "message"
// or "text"), else which nodes it paused at; its details hold
// eino_checkpoint_id, eino_checkpoint_ref (the artifact) and
// eino_interrupt_ids. The task then waits, holding no goroutine. When a
// person answers (router.Router.Answer), Handle runs again, finds the
// answered question with router.Task.Resumed, reads the checkpoint from
// the artifact store and resumes the graph from it with the answer as
// the resume data of every interrupt that caused the stop
// (compose.BatchResumeWithData; decoded from JSON, or by
// Options.ResumeValue): the graph goes on where it stopped, it does not
// replay. Because the ref is in the task's log, any process on the same
// store resumes it. Without a checkpoint store an interrupt ends the
// task with INPUT_REQUIRED, and a subtask (which cannot ask) ends so too.
//
// # Errors
//
// New and Tool fail with [ErrOptions] (INVALID_FIELD); a request that
// does not decode into the graph's input fails with [ErrInput]
// (VALIDATION). A graph error that is neither a tool's nor a model's
// keeps its code when it has one, else is INTERNAL.
//
// # Caveats
//
// A streamed model call is recorded when the bridge has read its copy of
// the stream to the end, which happens while the graph goes on: its
// x.clutch.model_call may come after the events its output caused, but
// always before the task's result (Handle waits for those readers, so a
// model whose stream never ends holds the task). Options.Tools only
// lists tools on the card: the graph has its tools already.
//
// eino's ADK agents (adk.Agent, adk.Runner) are not wrapped: they take
// no per-run compose callbacks, so their model and tool calls would have
// to be read from their event stream instead. A ChatModelAgent's tools
// can still be Clutch capabilities through Tool.
//
// # Overhead
//
// BenchmarkToolLoopDirect and BenchmarkToolLoopBridge run the same
// ReAct tool loop with the same fake model, directly and as a Clutch task
// on memstore; the difference is the bridge's cost (the events it
// stores).
package eino
