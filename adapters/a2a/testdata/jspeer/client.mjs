// An A2A v1.0 client built on @a2a-js/sdk: the real peer that calls the Go
// Server of adapters/a2a in its tests. It runs one suite against the agent
// at <base url> and prints one JSON object with what it saw.
//
//   node client.mjs <base url>
//
// The agent is expected to behave like the test agents (see server.mjs):
// "slow:<n>:<ms>" streams progress, "fail:<why>" fails, "input:<q>" asks.
import { randomUUID } from 'node:crypto';
import {
  CancelTaskRequest,
  GetTaskRequest,
  Message,
  SendMessageRequest,
  StreamResponse,
  Task,
} from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';

const base = process.argv[2];
if (!base) {
  process.stderr.write('usage: node client.mjs <base url>\n');
  process.exit(2);
}

const request = (text, extra = {}) =>
  SendMessageRequest.fromJSON({
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...extra },
  });

const asJSON = (r) => ('messageId' in r ? { message: Message.toJSON(r) } : { task: Task.toJSON(r) });

const errorOf = (e) => ({ name: e.constructor?.name, message: String(e.message || e), code: e.code });

// The Go Server authenticates every call but the card: the key comes from
// A2A_API_KEY and goes on every request this process makes.
if (process.env.A2A_API_KEY) {
  const plain = globalThis.fetch;
  globalThis.fetch = (input, init = {}) => {
    const headers = new Headers(init.headers || (input instanceof Request ? input.headers : undefined));
    headers.set('Authorization', 'Bearer ' + process.env.A2A_API_KEY);
    return plain(input, { ...init, headers });
  };
}

async function main() {
  const out = {};
  const cardResp = await fetch(base.replace(/\/$/, '') + '/.well-known/agent-card.json');
  out.cardStatus = cardResp.status;

  // The resolver reads the card relative to the base URL, like a browser
  // resolves a link: without the trailing slash, ".../agents/echo" would
  // lose its last segment.
  const client = await new ClientFactory().createFromUrl(base.endsWith('/') ? base : base + '/');
  out.protocolVersion = client.protocolVersion;

  // send: text and data parts, a client-chosen contextId.
  const sent = await client.sendMessage(
    SendMessageRequest.fromJSON({
      message: {
        messageId: 'js-m-1',
        role: 'ROLE_USER',
        contextId: 'js-ctx',
        parts: [{ text: 'hello' }, { data: { n: 1 } }],
      },
    }),
  );
  out.send = asJSON(sent);

  // get: the same task read back.
  out.get = Task.toJSON(await client.getTask(GetTaskRequest.fromJSON({ id: sent.id })));

  // stream: every event, in order.
  out.stream = [];
  for await (const ev of client.sendMessageStream(request('slow:3:20'))) {
    const j = StreamResponse.toJSON(ev);
    const kind = Object.keys(j)[0];
    const v = j[kind];
    out.stream.push({ kind, state: v.status?.state, text: v.status?.message?.parts?.[0]?.text ?? v.artifact?.parts?.[0]?.text });
  }

  // fail and input-required answers.
  out.fail = asJSON(await client.sendMessage(request('fail:boom')));
  out.input = asJSON(await client.sendMessage(request('input:which market?')));

  // cancel: a slow task cancelled from its own stream.
  out.cancel = { states: [] };
  for await (const ev of client.sendMessageStream(request('slow:200:20'))) {
    const j = StreamResponse.toJSON(ev);
    const v = j.statusUpdate;
    if (!v) continue;
    out.cancel.states.push(v.status.state);
    if (out.cancel.states.length === 3) {
      const t = await client.cancelTask(CancelTaskRequest.fromJSON({ id: v.taskId }));
      out.cancel.answer = Task.toJSON(t).status.state;
    }
  }

  // errors: an unknown task.
  try {
    await client.getTask(GetTaskRequest.fromJSON({ id: 'task_nope' }));
    out.unknown = 'no error';
  } catch (e) {
    out.unknown = errorOf(e);
  }
  return out;
}

main().then(
  (out) => {
    process.stdout.write(JSON.stringify(out) + '\n');
  },
  (e) => {
    process.stderr.write(`client.mjs: ${e.stack || e}\n`);
    process.exit(1);
  },
);
