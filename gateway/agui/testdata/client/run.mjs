// The AG-UI peer of the gateway/agui tests: the real @ag-ui/client
// HttpAgent against the Go handler. It prints one JSON line per AG-UI event
// the agent received ({"event": ...}), then one line with how the run ended
// ({"done": {result, newMessages, state}} or {"failed": message}).
//
//   node run.mjs run   <url> <api key> <threadId> <runId> <text>   POST a RunAgentInput
//   node run.mjs watch <url> <api key> <run_id>                    GET ?run=<run_id>
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

let agent, params;
if (mode === "run") {
  const [threadId, runId, text] = args;
  agent = new HttpAgent({
    url,
    headers: { Authorization: `Bearer ${key}` },
    threadId,
    initialMessages: [{ id: "user-1", role: "user", content: text }],
    initialState: { from: "client" },
  });
  params = { runId, forwardedProps: { locale: "en" }, context: [{ description: "tz", value: "UTC" }] };
} else if (mode === "watch") {
  const [run] = args;
  agent = new WatchAgent({ url: `${url}?run=${encodeURIComponent(run)}`, headers: { Authorization: `Bearer ${key}` } });
  params = {};
} else {
  console.error("usage: run.mjs run|watch ...");
  process.exit(2);
}

try {
  const out = await agent.runAgent(params, {
    onEvent({ event }) {
      print({ event });
    },
  });
  print({ done: { result: out.result ?? null, newMessages: out.newMessages, state: agent.state } });
} catch (err) {
  print({ failed: String(err && err.message ? err.message : err) });
}
