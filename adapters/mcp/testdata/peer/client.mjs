// A TypeScript SDK (v1) MCP client for the Go server surface of
// adapters/mcp: it lists the tools, lists the agents, submits a task with
// progress, submits an invalid one, and prints one JSON report on stdout.
//
//   node client.mjs --url http://127.0.0.1:PORT/
//   node client.mjs --stdio /path/to/server-binary   (env passed through)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
};

const transport = arg('--url')
  ? new StreamableHTTPClientTransport(new URL(arg('--url')), {
      // The Go server authenticates every HTTP request.
      requestInit: process.env.MCP_API_KEY ? { headers: { Authorization: 'Bearer ' + process.env.MCP_API_KEY } } : undefined,
    })
  : new StdioClientTransport({ command: arg('--stdio'), args: [], env: { ...process.env }, stderr: 'inherit' });

const client = new Client({ name: 'clutch-ts-host', version: '0.1.0' });
await client.connect(transport);

const report = { server: client.getServerVersion() };
report.tools = (await client.listTools()).tools.map((t) => t.name);

const agents = await client.callTool({ name: 'list_agents', arguments: {} });
report.agents = agents.structuredContent.agents.map((a) => a.agent_id);

const progress = [];
const submit = await client.callTool(
  { name: 'submit_task', arguments: { payload_type: 'research.query.v1', payload: { query: 'from TypeScript' }, requires: ['skill:research'] } },
  undefined,
  { onprogress: (p) => progress.push(p.message), timeout: 30000 },
);
report.submit = { isError: submit.isError ?? false, structured: submit.structuredContent, text: submit.content[0].text };
report.progress = progress;

const bad = await client.callTool({ name: 'submit_task', arguments: { payload_type: 'research.query.v1', payload: { query: '' } } });
report.invalid = { isError: bad.isError ?? false, structured: bad.structuredContent };

await client.close();
process.stdout.write(JSON.stringify(report) + '\n');
