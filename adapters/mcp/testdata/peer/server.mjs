// A test peer for adapters/mcp on the TypeScript MCP SDK (v1, protocol
// 2025-11-25): the tools server-everything lacks, for the failure modes of
// docs/protocol.md §13.3.5 and docs/protocol.md §15's structured errors. Deterministic, no network
// beyond 127.0.0.1.
//
//   node server.mjs --transport stdio
//   node server.mjs --transport http     # prints "listening <url>" on stdout
//
// Tools: echo, structured (outputSchema), fail_tool (isError),
// fail_retryable (docs/protocol.md §15 envelope), rate_limited (envelope with
// retryAfter), slow (progress, honours cancel), hang (never answers),
// large (a result of `bytes` bytes), crash (exits mid-call). Over HTTP,
// a tools/call of "http_429" is answered 429 with Retry-After: 7.
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const transport = process.argv.includes('--transport') ? process.argv[process.argv.indexOf('--transport') + 1] : 'stdio';
const log = (...a) => process.stderr.write(`[clutch-peer ${transport}] ${a.join(' ')}\n`);

const text = (t) => ({ content: [{ type: 'text', text: t }] });
const sleep = (ms, signal) => new Promise((resolve, reject) => {
  const t = setTimeout(resolve, ms);
  signal?.addEventListener('abort', () => { clearTimeout(t); reject(new Error('cancelled')); }, { once: true });
});

function newServer() {
  const s = new McpServer({ name: 'clutch-peer', version: '0.1.0' });
  s.registerTool('echo', { description: 'Echo the text back.', inputSchema: { text: z.string() } },
    async ({ text: t }) => text(t));
  s.registerTool('structured', {
    description: 'Deterministic weather with an outputSchema.',
    inputSchema: { city: z.string() },
    outputSchema: { city: z.string(), tempC: z.number(), conditions: z.string() },
  }, async ({ city }) => {
    const out = { city, tempC: 21.5, conditions: 'clear' };
    return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
  });
  s.registerTool('fail_tool', { description: 'Always a tool execution error (isError).' },
    async () => ({ ...text('fail_tool: deliberate failure'), isError: true }));
  s.registerTool('fail_retryable', { description: 'isError with a docs/protocol.md §15 structured error envelope.' }, async () => {
    const env = { error: 'stale knownHashes: memory changed since last load', code: 'STALE_HASH', retryable: true, retryAction: 'call memload again without knownHashes' };
    return { content: [{ type: 'text', text: JSON.stringify(env) }], structuredContent: env, isError: true };
  });
  s.registerTool('rate_limited', { description: 'isError envelope asking to retry after 3 s.' }, async () => {
    const env = { error: 'too many calls', code: 'RATE_LIMITED', retryable: true, retryAfter: 3 };
    return { content: [{ type: 'text', text: JSON.stringify(env) }], structuredContent: env, isError: true };
  });
  s.registerTool('slow', {
    description: 'Sleeps `seconds`, emitting `steps` progress notifications; stops on cancellation.',
    inputSchema: { seconds: z.number(), steps: z.number().int() },
  }, async ({ seconds, steps }, extra) => {
    const token = extra._meta?.progressToken;
    try {
      for (let i = 1; i <= steps; i++) {
        await sleep((seconds * 1000) / steps, extra.signal);
        if (token !== undefined) {
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps, message: `step ${i}/${steps}` } });
        }
      }
    } catch (e) {
      log('slow: cancelled');
      throw e;
    }
    return text(`slow: done after ${seconds}s`);
  });
  s.registerTool('hang', { description: 'Never answers until cancelled.' }, async (extra) => {
    await new Promise((resolve) => extra.signal.addEventListener('abort', resolve, { once: true }));
    log('hang: cancelled');
    return text('hang: cancelled');
  });
  s.registerTool('large', { description: 'One text block of `bytes` bytes.', inputSchema: { bytes: z.number().int() } },
    async ({ bytes }) => text('x'.repeat(bytes)));
  s.registerTool('crash', { description: 'Exits the server process mid-call.' }, async () => {
    log('crash: exiting');
    setTimeout(() => process.exit(3), 10);
    await sleep(10000);
    return text('unreachable');
  });
  return s;
}

if (transport === 'stdio') {
  log('ready');
  await newServer().connect(new StdioServerTransport());
} else {
  const http = createServer(async (req, res) => {
    if (req.url !== '/mcp') { res.writeHead(404).end(); return; }
    if (req.method !== 'POST') { res.writeHead(405, { Allow: 'POST' }).end(); return; }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    let body;
    try { body = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch { res.writeHead(400).end(); return; }
    if (body?.method === 'tools/call' && body?.params?.name === 'http_429') {
      res.writeHead(429, { 'Retry-After': '7', 'Content-Type': 'text/plain' }).end('slow down');
      return;
    }
    // Stateless: a fresh server and transport per request.
    const server = newServer();
    const t = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => { t.close(); server.close(); });
    await server.connect(t);
    await t.handleRequest(req, res, body);
  });
  http.listen(0, '127.0.0.1', () => {
    const { port } = http.address();
    log('listening');
    process.stdout.write(`listening http://127.0.0.1:${port}/mcp\n`);
  });
  process.stdin.on('end', () => process.exit(0)); // the test closed our stdin
  process.stdin.resume();
}
