// Package langchaingo brings agents and chains built with LangChainGo
// (github.com/tmc/langchaingo) into a Clutch team in the same binary, and
// gives them the team as a tool.
//
// It is a nested Go module (its own go.mod), so `go get` of Clutch never
// pulls LangChainGo's dependencies. It needs LangChainGo v0.1.14.
//
// # Basics
//
// [New] wraps an agents.Executor — or any chains.Chain — as a Clutch
// agent; register it with its card:
//
//	llm, _ := openai.New(openai.WithCallback(langchaingo.Callbacks{Model: "gpt-4o", Provider: "openai"}))
//	ex := agents.NewExecutor(agents.NewOneShotAgent(llm, []tools.Tool{weather, langchaingo.HumanTool(nil)}))
//	a, _ := langchaingo.New("agent:forecaster", ex, nil)
//	r.Register(ctx, a.Card(), a.Handle)
//
// The card has the agent's name and description, one capability
// "skill:<name>" (or Options.Capabilities) and the executor's tools (and
// Options.Tools) as the capability's tools ("langchaingo:<tool name>").
// Handle decodes the task.request payload into the chain's inputs, runs
// chains.Call and makes its outputs the result.
//
// [Tool] is the other way round: a capability of the team as a
// tools.Tool, so a LangChainGo agent can delegate to the team. Inside a
// Clutch task (router.TaskFrom(ctx) != nil) a call is a subtask of that
// task — a routing decision, the run's budget, its cancellation and trace
// come with it; elsewhere it submits a root task and waits for it.
//
// [HumanTool] is a tool with which the agent asks a person (below).
//
// # Mapping
//
// LangChainGo's callbacks are set on each component when it is built and
// tell no call id, so the bridge records what it can pair exactly:
// [Callbacks] is the callbacks.Handler to give the model (the task is
// found in the context the model is called with; one value serves every
// task), and tools are wrapped by [WrapTool], which New does for the
// tools of the executor's agent (a copy: the caller's executor is not
// changed). A model that calls no callbacks handler (llms/fake, say) is
// not recorded.
//
//	LangChainGo                             Clutch
//	request payload: JSON string, {"text"}  the value of the chain's one input
//	                                        key ("input"; memory keys aside)
//	request payload: other JSON object      the inputs, member by member
//	outputs, one output key                 result payload: its value (the
//	                                        answer's text for an agent)
//	outputs, several keys                   result payload: the outputs object
//	model call (Callbacks:                  one x.clutch.model_call at its end:
//	HandleLLMGenerateContentStart ..        model (GenerationInfo "model", else
//	End / HandleLLMError)                   Callbacks.Model), provider, usage
//	                                        from GenerationInfo (InputTokens or
//	                                        PromptTokens, OutputTokens or
//	                                        CompletionTokens, TotalTokens),
//	                                        finish reason (StopReason), tool
//	                                        calls asked for, duration, error
//	tool call (WrapTool)                    tool.call {call_id, tool
//	                                        "langchaingo", name, args: the
//	                                        input string}; tool.result
//	                                        {content: the output} or
//	                                        tool.error, the same call_id
//	streamed chunks (Options.Stream:        task.progress {"text"}, each at
//	chains.WithStreamingFunc)               least Options.ProgressBytes
//	                                        (default 64) — tiny chunks are
//	                                        gathered, never split inside a
//	                                        character; what is left goes at
//	                                        the end of the model call, before
//	                                        a tool call and at the end of the
//	                                        run
//	HumanTool call                          task.question (router.Task.Ask)
//	a tool's error                          task.error TOOL_FAILED (details:
//	                                        tool, name, call_id, cause_code)
//	a model's error (HandleLLMError, or     task.error DEPENDENCY (retryable);
//	an llms.Error)                          an llms.Error of rate limit or quota
//	                                        RATE_LIMITED, of timeout TIMEOUT
//	model answer the agent cannot parse     task.error DEPENDENCY
//	agents.ErrNotFinished (iterations)      task.error BUDGET
//	inputs the chain refuses                task.error VALIDATION
//	other errors                            their code when coded, else INTERNAL
//	task cancelled or timed out             the chain's ctx ends: a model or
//	                                        tool that honours ctx stops, the
//	                                        executor returns, task.cancel
//
// What is lost: the executor's own steps (HandleAgentAction,
// HandleAgentFinish, chain starts and ends) and the model's messages
// (prompts, replies) are not events, only each model call's numbers; an
// action naming a tool the agent does not have is not a tool call (the
// executor answers the model itself); LangChainGo's own tool call ids (an
// OpenAI functions agent's) are not kept — the call id is the tool.call
// event's own id. Model calls that overlap in one run are paired with
// their starts in order, so their durations may be swapped. A model or
// tool call in flight when the task is cancelled or times out gets its
// outcome (a tool.error CANCELLED) only when it ends before the router
// stores the task.cancel or task.timeout; after that the task has ended,
// and the router takes no more of its events.
//
// An agents.Executor stops at a tool's error (the agent does not see it
// as an observation): the run fails with TOOL_FAILED. A Tool whose
// subtask failed is such an error, its cause_code the subtask's code.
//
// # Human input
//
// LangChainGo has no interrupt or checkpoint of its own. A call of
// [HumanTool] asks its input as a question of the task (router.Task.Ask)
// and returns Ask's ErrWaiting, which ends the run; the task waits for the
// answer holding no goroutine (its tool call ends with a tool.error
// INPUT_REQUIRED). When a person answers (router.Router.Answer), the
// router runs Handle again and the chain runs again from the start, with
// the same inputs and a fresh attempt: every model call before the
// question is made again (and recorded again), every tool call before it
// runs again, and the human tool's call now returns the answer — Ask
// returns recorded answers in the order the questions were asked. So
// tools that run before a question should be idempotent, and a model
// that answers the replayed turns differently may reach other questions
// than the first run did (the recorded answers still go by order). A
// subtask cannot ask: its human tool fails.
//
// # Errors
//
// New, Tool fail with [ErrOptions] (INVALID_FIELD); a request that does
// not fit the chain's inputs fails with [ErrInput] (VALIDATION), saying
// which input is missing or what the payload was.
//
// # Caveats
//
// Options.Stream passes chains.WithStreamingFunc on every run, which
// makes a streaming-capable model stream and replaces a streaming func
// the agent set itself. LangChainGo's executor does not look at ctx
// between its steps: a cancelled run stops when its model or tool sees
// ctx end (the providers' HTTP calls do).
//
// # Overhead
//
// BenchmarkToolLoopDirect and BenchmarkToolLoopBridge run the same
// one-shot agent executor (a model call, a tool call, a model call) with
// the same fake model, directly and as a Clutch task on memstore; the
// difference is the bridge's cost (the events it stores).
package langchaingo
