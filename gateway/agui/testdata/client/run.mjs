// The AG-UI peer of the gateway/agui tests: the real @ag-ui/client
// HttpAgent against the Go handler. It prints one JSON line per AG-UI event
// the agent received ({"event": ...}), then one line with how the run ended
// ({"done": {result, newMessages, state}} or {"failed": message}).
//
//   node run.mjs run   <url> <api key> <threadId> (<runId> <text>)...   POST a RunAgentInput
//                      per pair, each a new user turn of one conversation
//   node run.mjs watch <url> <api key> <run_id>                        GET ?run=<run_id>
//   node run.mjs interrupt <url> <api key> <threadId> <runId> <text> <runId> <answer JSON>
//                      POST a RunAgentInput; when the run ends with an
//                      interrupt, answer it with a resume entry in the next run
import { HttpAgent } from "@ag-ui/client";

const [mode, url, key, ...args] = process.argv.slice(2);
const print = (o) => process.stdout.write(JSON.stringify(o) + "\n");

// WatchAgent streams an existing run: the same HttpAgent pipeline (SSE
// parsing, schema validation, event verification, state application) over a
// GET of the handler's watch endpoint instead of a POST.
class WatchAgent extends HttpAgent {
  requestInit() {
    return {
      method: "GET",
      headers: { ...this.headers, Accept: "text/event-stream" },
      signal: this.abortController.signal,
    };
  }
}

async function run(agent, params) {
  try {
    const out = await agent.runAgent(params, {
      onEvent({ event }) {
        print({ event });
      },
    });
    print({ done: { result: out.result ?? null, newMessages: out.newMessages, state: agent.state, interrupts: agent.pendingInterrupts } });
  } catch (err) {
    print({ failed: String(err && err.message ? err.message : err) });
  }
}

if (mode === "run") {
  const [threadId, ...turns] = args;
  const agent = new HttpAgent({
    url,
    headers: { Authorization: `Bearer ${key}` },
    threadId,
    initialState: { from: "client" },
  });
  for (let i = 0; i < turns.length; i += 2) {
    // The next turn sends the whole conversation back: the earlier user
    // messages, assistant messages with toolCalls, and tool messages.
    agent.addMessage({ id: `user-${i / 2 + 1}`, role: "user", content: turns[i + 1] });
    await run(agent, { runId: turns[i], forwardedProps: { locale: "en" }, context: [{ description: "tz", value: "UTC" }] });
  }
} else if (mode === "interrupt") {
  const [threadId, runId, text, resumeRunId, answer] = args;
  const agent = new HttpAgent({ url, headers: { Authorization: `Bearer ${key}` }, threadId });
  agent.addMessage({ id: "user-1", role: "user", content: text });
  await run(agent, { runId });
  // The client refuses a run that does not address every pending interrupt.
  const resume = agent.pendingInterrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: JSON.parse(answer) }));
  await run(agent, { runId: resumeRunId, resume });
} else if (mode === "watch") {
  const [runId] = args;
  await run(new WatchAgent({ url: `${url}?run=${encodeURIComponent(runId)}`, headers: { Authorization: `Bearer ${key}` } }), {});
} else {
  console.error("usage: run.mjs run|watch ...");
  process.exit(2);
}
