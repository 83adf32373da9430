// Test graphs for the Clutch adapters/langgraph tests, served by
// `langgraphjs dev`. Deterministic fake "models": no keys, no network.
import { AIMessage, ToolMessage } from "@langchain/core/messages";
import { Annotation, Command, END, MessagesAnnotation, START, Send, StateGraph, interrupt } from "@langchain/langgraph";

const lastText = (state) => {
  const m = state.messages[state.messages.length - 1];
  return typeof m?.content === "string" ? m.content : "";
};

// agent: a tool-calling loop. The fake model asks for add(a, b) once, then
// answers with the tool's result; the tools node runs the tool (and a
// failing tool "div" when asked to divide by zero) and writes a custom
// stream event.
const model = (state) => {
  const tools = state.messages.filter((m) => m._getType?.() === "tool" || m.type === "tool");
  if (tools.length === 0) {
    const div = lastText(state).includes("divide");
    return {
      messages: [new AIMessage({
        content: "",
        tool_calls: div
          ? [{ name: "div", args: { a: 1, b: 0 }, id: "call_div_1", type: "tool_call" }]
          : [{ name: "add", args: { a: 2, b: 3 }, id: "call_add_1", type: "tool_call" }],
      })],
    };
  }
  return { messages: [new AIMessage({ content: "The answer is " + tools[tools.length - 1].content })] };
};
const runTools = (state, config) => {
  const ai = state.messages[state.messages.length - 1];
  config.writer?.({ tool_progress: ai.tool_calls.length });
  return {
    messages: ai.tool_calls.map((c) => c.name === "add"
      ? new ToolMessage({ content: String(c.args.a + c.args.b), tool_call_id: c.id, name: c.name })
      : new ToolMessage({ content: "division by zero", tool_call_id: c.id, name: c.name, status: "error" })),
  };
};
export const agent = new StateGraph(MessagesAnnotation)
  .addNode("model", model)
  .addNode("tools", runTools)
  .addEdge(START, "model")
  .addConditionalEdges("model", (s) => (s.messages[s.messages.length - 1].tool_calls?.length ? "tools" : END))
  .addEdge("tools", "model")
  .compile();

// approval: interrupts for human input, then answers with the resume value.
export const approval = new StateGraph(MessagesAnnotation)
  .addNode("ask", (state) => {
    const answer = interrupt("Approve the refund for: " + lastText(state) + "?");
    return { messages: [new AIMessage({ content: "Human said: " + answer })] };
  })
  .addEdge(START, "ask")
  .compile();

// supervisor: hands off to a research subgraph (a compiled graph as a node).
const research = new StateGraph(MessagesAnnotation)
  .addNode("search", () => ({ messages: [new AIMessage({ content: "found 3 papers", name: "research" })] }))
  .addEdge(START, "search")
  .compile();
export const supervisor = new StateGraph(MessagesAnnotation)
  .addNode("supervisor", () => new Command({
    goto: "research",
    update: { messages: [new AIMessage({ content: "handing off to research", name: "supervisor" })] },
  }), { ends: ["research"] })
  .addNode("research", research)
  .addEdge(START, "supervisor")
  .addEdge("research", END)
  .compile();

// thrower: a node that throws.
export const thrower = new StateGraph(MessagesAnnotation)
  .addNode("explode", () => { throw new Error("boom: the graph failed on purpose"); })
  .addEdge(START, "explode")
  .compile();

// slow: waits (up to a minute) until the run is cancelled.
export const slow = new StateGraph(MessagesAnnotation)
  .addNode("wait", async (_state, config) => {
    config.writer?.({ waiting: true });
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, 60000);
      config.signal?.addEventListener("abort", () => { clearTimeout(timer); reject(new Error("aborted")); });
    });
    return { messages: [new AIMessage({ content: "done waiting" })] };
  })
  .addEdge(START, "wait")
  .compile();

// publish: a static breakpoint (interruptBefore) before "publish"; the
// follow-up run continues from it.
export const publish = new StateGraph(MessagesAnnotation)
  .addNode("draft", () => ({ messages: [new AIMessage({ content: "draft ready" })] }))
  .addNode("publish", () => ({ messages: [new AIMessage({ content: "published" })] }))
  .addEdge(START, "draft")
  .addEdge("draft", "publish")
  .addEdge("publish", END)
  .compile({ interruptBefore: ["publish"] });

// nested: an interrupt two subgraphs deep (outer → middle → inner → ask).
const inner = new StateGraph(MessagesAnnotation)
  .addNode("ask", () => {
    const answer = interrupt("Deep question: go on?");
    return { messages: [new AIMessage({ content: "inner got: " + answer })] };
  })
  .addEdge(START, "ask")
  .compile();
const middle = new StateGraph(MessagesAnnotation)
  .addNode("inner", inner)
  .addEdge(START, "inner")
  .compile();
export const nested = new StateGraph(MessagesAnnotation)
  .addNode("middle", middle)
  .addEdge(START, "middle")
  .compile();

// fanout: a Send fan-out of three branches; the branch of "bad" throws.
const FanState = Annotation.Root({
  ...MessagesAnnotation.spec,
  item: Annotation(),
});
export const fanout = new StateGraph(FanState)
  .addNode("plan", () => ({ messages: [new AIMessage({ content: "fanning out" })] }))
  .addNode("work", (s) => {
    if (s.item === "bad") throw new Error("branch bad failed on purpose");
    return { messages: [new AIMessage({ content: "worked on " + s.item })] };
  })
  .addEdge(START, "plan")
  .addConditionalEdges("plan", () => ["a", "bad", "c"].map((item) => new Send("work", { item })))
  .addEdge("work", END)
  .compile();

// twice: one node that interrupts twice; each resume meets the next.
export const twice = new StateGraph(MessagesAnnotation)
  .addNode("ask", () => {
    const first = interrupt("First question?");
    const second = interrupt("Second question?");
    return { messages: [new AIMessage({ content: "answers: " + first + ", " + second })] };
  })
  .addEdge(START, "ask")
  .compile();

// choose: an interrupt whose value is an object with a question and its
// choices; the answer is one of them.
export const choose = new StateGraph(MessagesAnnotation)
  .addNode("pick", () => {
    const colour = interrupt({ question: "Which colour?", choices: ["red", "green"] });
    return { messages: [new AIMessage({ content: "chose " + colour })] };
  })
  .addEdge(START, "pick")
  .compile();

// count: an interrupt whose value carries a JSON Schema for the answer.
export const count = new StateGraph(MessagesAnnotation)
  .addNode("count", () => {
    const n = interrupt({ message: "How many copies?", schema: { type: "integer", minimum: 1 } });
    return { messages: [new AIMessage({ content: "copies: " + n })] };
  })
  .addEdge(START, "count")
  .compile();

// pair: two branches in one step, each interrupting: the run stops on two
// interrupts at once.
export const pair = new StateGraph(MessagesAnnotation)
  .addNode("left", () => {
    const answer = interrupt("Left?");
    return { messages: [new AIMessage({ content: "left got " + answer })] };
  })
  .addNode("right", () => {
    const answer = interrupt("Right?");
    return { messages: [new AIMessage({ content: "right got " + answer })] };
  })
  .addEdge(START, "left")
  .addEdge(START, "right")
  .compile();

// hold: interrupts; resumed with "hang", the node writes a custom event and
// waits (up to a minute) until its run is cancelled; any other answer
// completes it.
export const hold = new StateGraph(MessagesAnnotation)
  .addNode("ask", async (_state, config) => {
    const answer = interrupt("Go on?");
    if (answer === "hang") {
      config.writer?.({ hanging: true });
      await new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, 60000);
        config.signal?.addEventListener("abort", () => { clearTimeout(timer); reject(new Error("aborted")); });
      });
    }
    return { messages: [new AIMessage({ content: "went on: " + answer })] };
  })
  .addEdge(START, "ask")
  .compile();
