// An @a2a-js/sdk client that answers a question of the Go Server of
// adapters/a2a (docs/protocol.md §2.7): it sends "ask:<choices>" to the
// agent at <base url>, which asks "Which one?" and waits (INPUT_REQUIRED,
// the question as a text and a data part), then sends <answer> as the next
// message of the same task and context. It prints one JSON object with
// both tasks as the SDK decoded them.
//
//   node ask.mjs <base url> <choices, a|b> <answer>
//
// A2A_API_KEY goes on every request, as with client.mjs.
import { randomUUID } from 'node:crypto';
import { SendMessageRequest, Task } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';

const [base, choices, answer] = process.argv.slice(2);
if (!base || choices === undefined || !answer) {
  process.stderr.write('usage: node ask.mjs <base url> <choices, a|b> <answer>\n');
  process.exit(2);
}

if (process.env.A2A_API_KEY) {
  const plain = globalThis.fetch;
  globalThis.fetch = (input, init = {}) => {
    const headers = new Headers(init.headers || (input instanceof Request ? input.headers : undefined));
    headers.set('Authorization', 'Bearer ' + process.env.A2A_API_KEY);
    return plain(input, { ...init, headers });
  };
}

// A blocking send answers with the Task (not a Message) here: anything
// else is a failure of the round trip.
const taskOf = (r, what) => {
  if (!('id' in r) || 'messageId' in r) {
    throw new Error(`${what}: want a task, got ${JSON.stringify(r)}`);
  }
  return Task.toJSON(r);
};

async function main() {
  const client = await new ClientFactory().createFromUrl(base.endsWith('/') ? base : base + '/');
  const contextId = 'js-ask-' + randomUUID();
  const asked = taskOf(
    await client.sendMessage(
      SendMessageRequest.fromJSON({
        message: { messageId: randomUUID(), role: 'ROLE_USER', contextId, parts: [{ text: 'ask:' + choices }] },
      }),
    ),
    'the asking send',
  );
  // The answer: the next message on the waiting task, in its context.
  const done = taskOf(
    await client.sendMessage(
      SendMessageRequest.fromJSON({
        message: { messageId: randomUUID(), role: 'ROLE_USER', taskId: asked.id, contextId: asked.contextId, parts: [{ text: answer }] },
      }),
    ),
    'the answer',
  );
  return { contextId, asked, done };
}

main().then(
  (out) => {
    process.stdout.write(JSON.stringify(out) + '\n');
  },
  (e) => {
    process.stderr.write(`ask.mjs: ${e.stack || e}\n`);
    process.exit(1);
  },
);
