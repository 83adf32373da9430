// The independent Standard Webhooks peer of adapters/webhook's tests, built on
// the `standardwebhooks` npm library (pinned in package-lock.json).
//
//   node peer.mjs send <url> <secret>   signs deliveries with the library and
//       POSTs them to url: a good one, and tampered ones (body, id, stale
//       timestamp); prints one JSON line per delivery {name, id, status, body}.
//   node peer.mjs receive <secret>      serves HTTP on 127.0.0.1 (port chosen by
//       the OS, printed as "LISTENING <port>"); verifies every POST with the
//       library, answers 204 or 401, and prints "OK <webhook-id> <type>" or
//       "FAIL <reason>" per request. Ends when stdin closes.
import http from "node:http";
import { Webhook } from "standardwebhooks";

const [mode, ...args] = process.argv.slice(2);

if (mode === "send") {
  const [url, secret] = args;
  const wh = new Webhook(secret);
  const now = new Date();
  const body = JSON.stringify({ event: "order.created", data: { order_id: 42, sku: "A-1", note: "héllo ✓" } });
  const send = async (name, id, ts, sigBody, sentBody) => {
    const headers = {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(ts.getTime() / 1000)),
      "webhook-signature": wh.sign(id, ts, sigBody),
    };
    const res = await fetch(url, { method: "POST", headers, body: sentBody });
    console.log(JSON.stringify({ name, id, status: res.status, body: await res.text() }));
  };
  await send("good", "msg_node_1", now, body, body);
  await send("again", "msg_node_1", now, body, body);
  await send("tampered body", "msg_node_2", now, body, body.replace("42", "43"));
  await send("stale", "msg_node_3", new Date(now.getTime() - 10 * 60 * 1000), body, body);
} else if (mode === "receive") {
  const [secret] = args;
  const wh = new Webhook(secret);
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      try {
        const msg = wh.verify(body, req.headers);
        console.log(`OK ${req.headers["webhook-id"]} ${msg.type}`);
        res.writeHead(204).end();
      } catch (e) {
        console.log(`FAIL ${e.message}`);
        res.writeHead(401).end();
      }
    });
  });
  server.listen(0, "127.0.0.1", () => console.log(`LISTENING ${server.address().port}`));
  process.stdin.on("end", () => server.close(() => process.exit(0)));
  process.stdin.resume();
} else {
  console.error("usage: node peer.mjs send <url> <secret> | receive <secret>");
  process.exit(2);
}
