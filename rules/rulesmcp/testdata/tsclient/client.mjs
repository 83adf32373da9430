// A TypeScript MCP SDK client for the rules tools of a Clutch MCP server
// (adapters/mcp with rules/rulesmcp): it runs every tool, its input rules
// and error rows, a full session (memsetup -> memdisc -> memload -> memref
// -> artifact -> agentreport) and a rejected one, and prints one JSON report
// on stdout for the Go test to check.
//
//   node client.mjs --url http://127.0.0.1:PORT/   (MCP_API_KEY: bearer key)
//   node client.mjs --stdio /path/to/server-binary  (env passed through)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
};

const transport = arg('--url')
  ? new StreamableHTTPClientTransport(new URL(arg('--url')), {
      requestInit: process.env.MCP_API_KEY ? { headers: { Authorization: 'Bearer ' + process.env.MCP_API_KEY } } : undefined,
    })
  : new StdioClientTransport({ command: arg('--stdio'), args: [], env: { ...process.env }, stderr: 'inherit' });

const client = new Client({ name: 'clutch-ts-rules-host', version: '0.1.0' });
await client.connect(transport);

const report = { tools: (await client.listTools()).tools.map((t) => t.name), calls: {} };

// call runs a tool and records isError, structuredContent and whether the
// text block holds the same JSON.
const call = async (label, name, args) => {
  const r = await client.callTool({ name, arguments: args });
  const text = r.content?.[0]?.text ?? '';
  let same = false;
  try {
    same = JSON.stringify(JSON.parse(text)) === JSON.stringify(r.structuredContent);
  } catch {}
  const rec = { isError: r.isError ?? false, sc: r.structuredContent, textIsStructured: same, blocks: r.content?.length ?? 0 };
  report.calls[label] = rec;
  return rec;
};

try {
  await client.callTool({ name: 'memory.begin', arguments: {} });
  report.unknownTool = 'no error';
} catch (e) {
  report.unknownTool = String(e.message ?? e);
}

await call('setup_missing_mpf', 'memsetup', { session_id: 'ts-1', knownHashes: {} });
await call('setup_no_hashes', 'memsetup', { session_id: 'ts-1' });
await call('setup_bad_type', 'memsetup', { session_id: 1, knownHashes: { 'META_PROMPT.md': '' } });
const setup = await call('setup', 'memsetup', { session_id: 'ts-1', knownHashes: { 'META_PROMPT.md': '' } });

const disc = await call('disc', 'memdisc', {});
await call('disc_workflow', 'memdisc', { kind: 'workflow' });
await call('disc_bad_kind', 'memdisc', { kind: 'mpf' });
const byPath = Object.fromEntries(disc.sc.items.map((i) => [i.path, i]));
const wf = byPath['workflow/CODING.md'];
const ctx = byPath['context/SETUP.md'];
const rule = byPath['rules/REVIEW.md'];

await call('load_no_hashes', 'memload', { ids: [wf.id] });
await call('load_missing_entry', 'memload', { ids: [wf.id, ctx.id], knownHashes: { [wf.id]: '' } });
await call('load_bad_type', 'memload', { ids: wf.id, knownHashes: { [wf.id]: '' } });
await call('load_unknown', 'memload', { ids: ['p-nope'], knownHashes: { 'p-nope': '' } });
await call('load', 'memload', { ids: [wf.id, ctx.id], knownHashes: { [wf.id]: '', [ctx.id]: ctx.hash } });
await call('load_delta', 'memload', { ids: [wf.id], knownHashes: { [wf.id]: wf.hash } });

await call('ref_missing', 'memref', {});
await call('ref_unknown_rule', 'memref', { refs: [{ ruleId: 'p-gone', constraintId: 'Steps' }] });
await call('ref_context', 'memref', { refs: [{ ruleId: ctx.id, constraintId: 'Steps' }] });
const bad = await call('ref_unknown_constraint', 'memref', { refs: [{ ruleId: wf.id, constraintId: 'Step' }] });
// Retry as told: copy validConstraints[].id exactly.
await call('ref', 'memref', { refs: [{ ruleId: wf.id, constraintId: bad.sc.validConstraints[0].id, ruleHash: wf.hash, reason: 'from TypeScript' }] });

const created = await call('art_create', 'artifact', { resource: 'context', op: { create: { path: 'spec/ts.md', body: '# TS\n' } } });
await call('art_create_again', 'artifact', { resource: 'context', op: { create: { path: 'spec/ts.md', body: 'again' } } });
await call('art_unsafe', 'artifact', { resource: 'context', op: { create: { path: '../../etc/passwd.md', body: 'x' } } });
await call('art_missing', 'artifact', { resource: 'rule', op: { update: { id: 'p-missing', body: 'x' } } });
await call('art_rename', 'artifact', { resource: 'rule', op: { rename: { id: rule.id, new_path: 'rules/REVIEWING.md' } } });
await call('art_update_incompatible', 'artifact', { resource: 'rule', op: { update: { id: rule.id, body: 'x' } } });
await call('art_delete_by_path', 'artifact', { resource: 'context', op: { delete: { id: 'spec/ts.md' } } });
await call('art_two_ops', 'artifact', { resource: 'rule', op: { discard: { id: rule.id }, delete: { id: rule.id } } });
await call('art_delete_tmp', 'artifact', { resource: 'context', op: { delete: { id: created.sc.id } } });

await call('report_empty', 'agentreport', { summary: '' });
await call('report_missing', 'agentreport', {});
await call('report', 'agentreport', { summary: 'done from TypeScript' });

await call('setup2', 'memsetup', { session_id: 'ts-2', knownHashes: { 'META_PROMPT.md': setup.sc.mpf.hash } });
await call('load2', 'memload', { ids: [wf.id], knownHashes: { [wf.id]: wf.hash } });
await call('rejected', 'agentrejected', { reason: 'did not run the checks' });

await client.close();
process.stdout.write(JSON.stringify(report) + '\n');
