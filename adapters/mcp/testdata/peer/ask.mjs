// A TypeScript SDK (v1) MCP host that declares elicitation and answers the
// questions of a Clutch task (docs/protocol.md §2.7) through the Go server
// surface of adapters/mcp. It submits a task to the agents with
// skill:ask; each elicitation/create the server sends is put to the
// "person" below, and a result with status "question" is answered with
// answer_question, until the task ends. It prints one JSON report on
// stdout: what it was asked and what each call returned.
//
//   node ask.mjs --url http://127.0.0.1:PORT/ --answer health \
//       --decision reject --reason later [--decline N]
//
// The person answers a choice or free text with --answer, an approval
// (a form with a "decision" field) with --decision and --reason, and
// declines the first N elicitations (--decline, 0 when absent).
// MCP_API_KEY is sent as a bearer token.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? def : process.argv[i + 1];
};
const answer = arg('--answer', '');
const approval = { decision: arg('--decision', 'approve'), ...(arg('--reason') ? { reason: arg('--reason') } : {}) };
let declines = Number(arg('--decline', '0'));

const transport = new StreamableHTTPClientTransport(new URL(arg('--url')), {
  requestInit: process.env.MCP_API_KEY ? { headers: { Authorization: 'Bearer ' + process.env.MCP_API_KEY } } : undefined,
});
const client = new Client({ name: 'clutch-ts-host', version: '0.1.0' }, { capabilities: { elicitation: { form: {} } } });

const report = { elicited: [], calls: [] };
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  const { message, requestedSchema } = req.params;
  const isApproval = 'decision' in (requestedSchema?.properties ?? {});
  const entry = { message, schema: requestedSchema };
  report.elicited.push(entry);
  if (declines > 0) {
    declines--;
    entry.action = 'decline';
    return { action: 'decline' };
  }
  entry.action = 'accept';
  return { action: 'accept', content: isApproval ? approval : { answer } };
});

await client.connect(transport);
report.protocolVersion = transport.protocolVersion;

const call = async (name, args) => {
  const res = await client.callTool({ name, arguments: args }, undefined, { timeout: 30000 });
  const out = { tool: name, isError: res.isError ?? false, structured: res.structuredContent, text: res.content?.[0]?.text };
  report.calls.push(out);
  return out;
};

let res = await call('submit_task', { payload_type: 'research.query.v1', payload: { query: 'q' }, requires: ['skill:ask'] });
for (let i = 0; i < 4 && !res.isError && res.structured?.status === 'question'; i++) {
  const q = res.structured.question;
  res = await call('answer_question', { question_id: q.question_id, value: q.kind === 'approval' ? approval : answer });
}

// A host ends its session (DELETE): a stateful server keeps it otherwise.
if (transport.sessionId) {
  await transport.terminateSession();
}
await client.close();
process.stdout.write(JSON.stringify(report) + '\n');
