// The three fromEnvelope functions of docs/protocol.md §12 ("Adapters (one file per
// model)": adapters/claude.ts, gpt5.ts, gemini.ts), with the TypeScript
// types removed and nothing else changed. Used by prompts_test.go to
// check the Go renderings against JavaScript itself:
//   node prompts.mjs envelope.json...  → one JSON line per envelope
import { readFileSync } from "node:fs";

function claudeFromEnvelope(e) {
  // Claude wants a compact, role‑labeled prompt
  return `[INTENT:${e.intent}] [TASK:${e.task}]\nCONTEXT:\n${e?.inputs?.context ?? ""}\nCONTENT:\n${e?.content?.text ?? JSON.stringify(e?.content?.data ?? {})}`;
}

function gpt5FromEnvelope(e) {
  return {
    system: `You speak Envelope v1. Intent=${e.intent}. Return JSON only.`,
    user: JSON.stringify({ task: e.task, context: e?.inputs?.context ?? null })
  };
}

function geminiFromEnvelope(e) {
  // Gemini likes concise tool‑centric prompts
  return `Goal: ${e.task}\nIntent: ${e.intent}\nContext: ${e?.inputs?.context ?? "n/a"}\nData:${JSON.stringify(e?.content?.data ?? {}, null, 2)}`;
}

for (const f of process.argv.slice(2)) {
  const e = JSON.parse(readFileSync(f, "utf8"));
  console.log(JSON.stringify({ claude: claudeFromEnvelope(e), gpt: gpt5FromEnvelope(e), gemini: geminiFromEnvelope(e) }));
}
