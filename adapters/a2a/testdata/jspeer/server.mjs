// An A2A v1.0 echo agent built on @a2a-js/sdk, the real peer the Go tests of
// adapters/a2a call. It listens on 127.0.0.1 with an OS-chosen port and prints
// one line "LISTENING <base url>" on stdout once it serves.
//
//   node server.mjs [--token T] [--no-streaming]
//
// --token T       JSON-RPC calls need "Authorization: Bearer T" (401 otherwise);
//                 the agent card stays public.
// --no-streaming  the card declares capabilities.streaming = false.
//
// What the agent does depends on the text of the user message:
//
//   fail:<why>        WORKING, then FAILED with <why> as the status message
//   input:<question>  INPUT_REQUIRED asking <question>; a follow-up message on
//                     the same task completes it with "answer: <text>"
//   slow:<n>[:<ms>]   WORKING, then n WORKING updates "step i/n" every <ms>
//                     (default 100) ms, then the echo artifact and COMPLETED;
//                     CancelTask stops it with CANCELED
//   message:<text>    answers with a bare Message "echo: <text>", no task
//   anything else     WORKING, an artifact "echo" holding "echo: <text>" and
//                     every data part of the request, then COMPLETED
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import express from 'express';
import { AgentCard, Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';

const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const value = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const token = value('--token');
const streaming = !flag('--no-streaming');

const now = () => new Date().toISOString();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function textOf(msg) {
  return (msg.parts || [])
    .filter((p) => p.content && p.content.$case === 'text')
    .map((p) => p.content.value)
    .join('\n');
}

function agentMessage(taskId, contextId, text) {
  return Message.toJSON(
    Message.fromJSON({ messageId: randomUUID(), role: 'ROLE_AGENT', taskId, contextId, parts: [{ text }] }),
  );
}

class EchoExecutor {
  constructor() {
    this.cancelled = new Set();
    this.contexts = new Map();
  }

  async execute(ctx, bus) {
    const msg = ctx.userMessage;
    const text = textOf(msg);
    const taskId = ctx.taskId;
    const contextId = ctx.contextId;

    if (text.startsWith('message:')) {
      bus.publish(
        AgentEvent.message(
          Message.fromJSON({
            messageId: randomUUID(),
            role: 'ROLE_AGENT',
            contextId,
            parts: [{ text: 'echo: ' + text.slice('message:'.length) }],
          }),
        ),
      );
      bus.finished();
      return;
    }

    this.contexts.set(taskId, contextId);
    const status = (state, message) =>
      AgentEvent.statusUpdate(
        TaskStatusUpdateEvent.fromJSON({
          taskId,
          contextId,
          status: { state, timestamp: now(), message: message ? agentMessage(taskId, contextId, message) : undefined },
        }),
      );
    const artifact = (parts) =>
      AgentEvent.artifactUpdate(
        TaskArtifactUpdateEvent.fromJSON({
          taskId,
          contextId,
          artifact: { artifactId: randomUUID(), name: 'echo', parts },
          lastChunk: true,
        }),
      );

    if (ctx.task) {
      // A follow-up to a task waiting for input: the task first (the SDK
      // wants it), back at work, then the answer.
      const again = Task.toJSON(ctx.task);
      again.status = { state: 'TASK_STATE_WORKING', timestamp: now() };
      bus.publish(AgentEvent.task(Task.fromJSON(again)));
      bus.publish(artifact([{ text: 'answer: ' + text }]));
      bus.publish(status('TASK_STATE_COMPLETED'));
      bus.finished();
      return;
    }

    bus.publish(
      AgentEvent.task(
        Task.fromJSON({
          id: taskId,
          contextId,
          status: { state: 'TASK_STATE_SUBMITTED', timestamp: now() },
          history: [Message.toJSON(msg)],
        }),
      ),
    );
    bus.publish(status('TASK_STATE_WORKING'));

    if (text.startsWith('fail:')) {
      bus.publish(status('TASK_STATE_FAILED', text.slice('fail:'.length)));
      bus.finished();
      return;
    }
    if (text.startsWith('input:')) {
      bus.publish(status('TASK_STATE_INPUT_REQUIRED', text.slice('input:'.length)));
      bus.finished();
      return;
    }
    if (text.startsWith('slow:')) {
      const [n, ms] = text.slice('slow:'.length).split(':').map((s) => parseInt(s, 10));
      for (let i = 1; i <= (n || 1); i++) {
        await sleep(ms || 100);
        if (this.cancelled.has(taskId)) {
          bus.finished();
          return;
        }
        bus.publish(status('TASK_STATE_WORKING', `step ${i}/${n}`));
      }
    }
    const parts = [{ text: 'echo: ' + text }];
    for (const p of msg.parts || []) {
      if (p.content && p.content.$case === 'data') {
        parts.push({ data: p.content.value, metadata: p.metadata });
      }
    }
    bus.publish(artifact(parts));
    bus.publish(status('TASK_STATE_COMPLETED'));
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    this.cancelled.add(taskId);
    bus.publish(
      AgentEvent.statusUpdate(
        TaskStatusUpdateEvent.fromJSON({
          taskId,
          contextId: this.contexts.get(taskId) || '',
          status: { state: 'TASK_STATE_CANCELED', timestamp: now() },
        }),
      ),
    );
    bus.finished();
  }
}

const app = express();
const server = http.createServer(app);
server.listen(0, '127.0.0.1', () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const card = AgentCard.fromJSON({
    name: 'js-echo',
    description: 'Echoes its input; fail:, input:, slow: and message: change what it does.',
    version: '1.0.0',
    supportedInterfaces: [{ url: base + '/a2a/jsonrpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: { streaming },
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: [
      { id: 'echo', name: 'Echo', description: 'Echoes text and data parts.', tags: ['echo', 'test'] },
      { id: 'slow-echo', name: 'Slow echo', description: 'Streams progress before echoing.', tags: ['stream'] },
    ],
    securitySchemes: token ? { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } } : undefined,
    securityRequirements: token ? [{ schemes: { bearer: { list: [] } } }] : undefined,
  });
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new EchoExecutor());
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  if (token) {
    app.use('/a2a/jsonrpc', (req, res, next) => {
      if (req.headers.authorization !== 'Bearer ' + token) {
        res.status(401).json({ error: 'unauthorized' });
        return;
      }
      next();
    });
  }
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  process.stdout.write(`LISTENING ${base}\n`);
});

const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections(); // idle keep-alive connections too
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
// The Go test closes our stdin when it is done: never outlive it.
process.stdin.on('end', stop);
process.stdin.resume();
