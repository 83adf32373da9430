// Clutch web UI. Plain JavaScript, no build step. Every piece of data from
// the server enters the page through text nodes (el() below), never as markup.
"use strict";
(function () {
  const API = (document.querySelector('meta[name="clutch-api"]').content || "v1").replace(/\/+$/, "");
  const KEY_STORE = "clutch.apiKey";
  const THEME_STORE = "clutch.theme";
  const PAGE = 5000;        // history page size (the API's maximum)
  const WINDOW = 200;       // events shown when a view opens; most events in one chunk
  const STEP = 100;         // earlier events added at a time as the reader scrolls up
  const THREAD_PAGE = 200;  // threads listed per page of the sidebar
  const PREVIEW_MAX = 64 << 10; // text artifacts up to this size are shown inline
  const $ = (id) => document.getElementById(id);

  // ---- DOM building: text only ------------------------------------------
  // el(tag, attrs, ...children): attrs go through setAttribute/properties,
  // children that are strings become text nodes.
  function el(tag, attrs, ...kids) {
    const n = document.createElement(tag);
    if (attrs) {
      for (const k in attrs) {
        const v = attrs[k];
        if (v === undefined || v === null || v === false) continue;
        if (k === "class") n.className = v;
        else if (k === "text") n.textContent = v;
        else if (k === "style") Object.assign(n.style, v); // CSSOM: allowed by the page's CSP, unlike a style attribute
        else n.setAttribute(k, v === true ? "" : String(v));
      }
    }
    for (const c of kids) add(n, c);
    return n;
  }
  function add(n, c) {
    if (c === undefined || c === null || c === false) return;
    if (Array.isArray(c)) { for (const x of c) add(n, x); return; }
    n.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  const threadHash = (id) => "#/thread/" + encodeURIComponent(id);
  const taskHash = (id) => "#/task/" + encodeURIComponent(id);

  // ---- state -------------------------------------------------------------
  const S = {
    key: sessionStorage.getItem(KEY_STORE) || "",
    view: null,          // {kind: "thread"|"task", id}
    gen: 0,              // bumps on every view change; stale async work checks it
    events: [],          // the view's events, in seq order
    lastSeq: 0,          // the highest seq shown: the stream resumes after it
    from: 0,             // index in events of the first event in the document
    runs: new Map(),     // run_id -> true, runs seen in the view
    threadRun: "",       // run_id of the thread's first event
    channel: "",
    results: new Map(),  // tool call id -> its tool.result / tool.error event
    callEls: new Map(),  // tool call id -> the element showing it
    stream: null,        // AbortController of the live stream
    threads: [],         // the listed threads, newest (highest last_seq) first
    threadMap: new Map(),// thread id -> its summary, every page loaded so far
    threadsBefore: null, // before= of the next older page: null before the first load, 0 at the end
    olderPages: false,   // whether an older page has been loaded (the refresh keeps its cursor then)
    threadsLoading: false,
    threadsGen: 0,       // bumps when the list is dropped (sign-out); stale pages are ignored
    blobURLs: [],        // object URLs of fetched artifacts, revoked when the view changes
    treeTimer: 0,
    unseen: 0,           // live events that arrived below a reader scrolled up
    waiting: new Map(),  // question id -> its entry of GET questions (questions that wait and this key may see)
    waitingLoaded: false,
    waitingSeq: -1,      // the view's last seq when the list was asked for: a question up to it that is not listed waits no more
    answers: new Map(),  // question id -> the task.answer event, of the view
    questionEls: new Map(), // question id -> [question event, its card] in the view
    sent: new Map(),     // question id -> the value this page answered it with
  };
  let timers = [];       // the sidebar's refresh intervals
  // For tests and debugging: the state, and what the page's CSP refused.
  window.__clutch = { state: S, csp: [], reloadThreads: () => loadThreads(), reloadWaiting: () => loadWaiting() };
  document.addEventListener("securitypolicyviolation", (e) => window.__clutch.csp.push(e.violatedDirective + " " + e.blockedURI));

  // ---- API ---------------------------------------------------------------
  class APIError extends Error {
    constructor(status, body) {
      const e = (body && body.error) || {};
      super(e.message || ("HTTP " + status));
      this.status = status; this.code = e.code || ""; this.retryable = !!e.retryable;
    }
  }
  async function api(path, opts) {
    opts = opts || {};
    const headers = Object.assign({ "Authorization": "Bearer " + S.key }, opts.headers || {});
    if (opts.body !== undefined) headers["Content-Type"] = "application/json";
    const res = await fetch(API + path, {
      method: opts.method || "GET", headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: opts.signal, cache: "no-store",
    });
    let body = null;
    const ct = res.headers.get("Content-Type") || "";
    if (ct.includes("json")) { try { body = await res.json(); } catch (_) { body = null; } }
    if (res.status === 401) { signOut("Your API key was not accepted."); throw new APIError(401, body); }
    if (!res.ok) throw new APIError(res.status, body);
    return body;
  }
  const qs = (o) => Object.keys(o).filter((k) => o[k] !== undefined && o[k] !== "" && o[k] !== null)
    .map((k) => encodeURIComponent(k) + "=" + encodeURIComponent(o[k])).join("&");

  // ---- sign-in -----------------------------------------------------------
  function showSignIn(msg) {
    $("signin").hidden = false;
    $("signin-error").textContent = msg || "";
    $("key").value = "";
    $("key").focus();
  }
  function signOut(msg) {
    S.key = "";
    sessionStorage.removeItem(KEY_STORE);
    stopStream();
    timers.forEach(clearInterval);
    timers = [];
    resetThreads();
    renderChannels();
    S.waiting = new Map(); S.waitingLoaded = false;
    renderWaiting();
    showSignIn(msg);
  }
  $("signin-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    S.key = $("key").value.trim();
    if (!S.key) return;
    try {
      await api("/threads?" + qs({ limit: 1 }));
    } catch (err) {
      // 403: a valid key that may not list threads; it may still answer
      // the questions that name it.
      if (err.status !== 403) {
        if (err.status !== 401) $("signin-error").textContent = "Could not sign in: " + err.message;
        return;
      }
    }
    sessionStorage.setItem(KEY_STORE, S.key);
    $("signin").hidden = true;
    start();
  });
  $("signout").addEventListener("click", () => signOut(""));

  // ---- theme -------------------------------------------------------------
  function applyTheme() {
    const saved = localStorage.getItem(THEME_STORE);
    const dark = saved ? saved === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
    document.documentElement.dataset.theme = dark ? "dark" : "light";
  }
  $("theme-toggle").addEventListener("click", () => {
    const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
    localStorage.setItem(THEME_STORE, next);
    applyTheme();
  });
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", applyTheme);
  applyTheme();

  $("tree-toggle").addEventListener("click", () => $("tree").classList.toggle("closed"));

  // ---- sidebar -----------------------------------------------------------
  function shortId(id) {
    const s = String(id || "");
    const u = s.indexOf("_");
    return u > 0 && s.length > u + 10 ? s.slice(0, u + 1) + "…" + s.slice(-6) : s;
  }
  // The sidebar lists threads newest first, a page (THREAD_PAGE) at a time:
  // loadThreads (re)reads the newest page, loadOlderThreads the page before
  // the oldest one listed (before=next_before), when the list is scrolled to
  // its end or its "older threads" button is pressed. Every page read is
  // kept, so a refresh never drops a thread the reader has paged to.
  function mergeThreads(list) {
    for (const t of list) if (t && typeof t.id === "string") S.threadMap.set(t.id, t);
    S.threads = Array.from(S.threadMap.values()).sort((a, b) => (Number(b.last_seq) || 0) - (Number(a.last_seq) || 0));
  }
  // resetThreads forgets every listed thread: another key may see others.
  function resetThreads() {
    S.threadsGen++;
    S.threadMap = new Map(); S.threads = []; S.threadsBefore = null; S.olderPages = false; S.threadsLoading = false;
  }
  async function loadThreads() {
    const gen = S.threadsGen;
    let body;
    try { body = await api("/threads?" + qs({ limit: THREAD_PAGE })); } catch (_) { return; }
    if (gen !== S.threadsGen) return;
    mergeThreads((body && body.threads) || []);
    if (S.threadsBefore === null || !S.olderPages) S.threadsBefore = (body && Number(body.next_before)) || 0;
    renderChannels();
  }
  async function loadOlderThreads() {
    if (S.threadsLoading || !S.threadsBefore) return;
    const gen = S.threadsGen;
    S.threadsLoading = true;
    renderMore();
    try {
      const body = await api("/threads?" + qs({ before: S.threadsBefore, limit: THREAD_PAGE }));
      if (gen !== S.threadsGen) return;
      mergeThreads((body && body.threads) || []);
      S.threadsBefore = (body && Number(body.next_before)) || 0;
      S.olderPages = true;
    } catch (_) {
      if (gen !== S.threadsGen) return; // the button stays; the reader may try again
    }
    S.threadsLoading = false;
    renderChannels();
  }
  function renderMore() {
    const b = $("threads-more");
    if (!b) return;
    b.hidden = !S.threadsBefore;
    b.disabled = S.threadsLoading;
    b.textContent = S.threadsLoading ? "loading older threads…" : "older threads…";
  }
  $("channels").addEventListener("scroll", () => {
    const n = $("channels");
    if (n.scrollHeight - n.scrollTop - n.clientHeight < 40) loadOlderThreads();
  }, { passive: true });
  function renderChannels() {
    const groups = new Map();
    for (const t of S.threads) {
      const ch = t.channel || "threads";
      if (!groups.has(ch)) groups.set(ch, []);
      groups.get(ch).push(t);
    }
    const nav = $("channels");
    nav.textContent = "";
    for (const [ch, list] of groups) {
      nav.appendChild(el("div", { class: "channel" }, el("h2", null, "# " + ch),
        list.map((t) => {
          const active = S.view && S.view.kind === "thread" && S.view.id === t.id;
          return el("a", { href: threadHash(t.id), class: "thread-link st-" + t.status + (active ? " active" : ""),
            title: t.id + " · " + t.status + " · updated " + t.updated, "data-thread": t.id },
          el("span", { class: "dot" }), el("span", { class: "name" }, shortId(t.id)),
          el("span", { class: "count", title: t.events + " events" }, fmtShort(t.updated)));
        })));
    }
    if (!S.threads.length) nav.appendChild(el("div", { class: "channel" }, el("h2", null, "No threads yet")));
    const more = el("button", { id: "threads-more", class: "link-btn threads-more", type: "button" });
    more.addEventListener("click", loadOlderThreads);
    nav.appendChild(more);
    nav.dataset.threads = String(S.threads.length);
    renderMore();
  }
  async function loadAgents() {
    const ul = $("agents");
    let body;
    try { body = await api("/agents"); } catch (err) {
      ul.textContent = "";
      ul.appendChild(el("li", { class: "load" }, err.status === 403 ? "(not visible to this key)" : "(unavailable)"));
      return;
    }
    ul.textContent = "";
    for (const a of (body && body.agents) || []) {
      const c = a.card || {};
      const name = (c.display && c.display.name) || c.agent_id || "?";
      const rate = typeof a.success_rate === "number" ? Math.round(a.success_rate * 100) + "%" : "";
      ul.appendChild(el("li", { title: (c.agent_id || "") + (a.online ? " · online" : " · offline"), "data-agent": c.agent_id },
        el("span", { class: "dot " + (a.online ? "on" : "off") }), el("span", { class: "name" }, name),
        el("span", { class: "load", title: "tasks in flight · recent success rate" },
          (a.in_flight || 0) + " running" + (rate ? " · " + rate : ""))));
    }
  }

  // ---- payload rendering ---------------------------------------------------
  function valueNode(v, depth) {
    depth = depth || 0;
    if (v === null) return el("span", { class: "null" }, "null");
    if (typeof v === "string") return el("span", { class: "str" }, v);
    if (typeof v === "number" || typeof v === "boolean") return el("span", { class: typeof v === "number" ? "num" : "bool" }, String(v));
    if (depth > 4) return el("pre", { class: "json" }, JSON.stringify(v, null, 2));
    if (Array.isArray(v)) {
      if (!v.length) return el("span", { class: "null" }, "[]");
      const shown = v.slice(0, 50);
      return el("ol", { class: "arr", start: "0" }, shown.map((x) => el("li", null, valueNode(x, depth + 1))),
        v.length > 50 ? el("li", { class: "meta" }, "… " + (v.length - 50) + " more") : null);
    }
    const keys = Object.keys(v);
    if (!keys.length) return el("span", { class: "null" }, "{}");
    return el("dl", { class: "obj" }, keys.slice(0, 100).map((k) => [el("dt", null, k), el("dd", null, valueNode(v[k], depth + 1))]));
  }
  const payloadNode = (p) => el("div", { class: "val" }, valueNode(p));

  function chatText(p) {
    if (typeof p === "string") return p;
    if (p && typeof p === "object") {
      for (const k of ["text", "content", "message", "body"]) if (typeof p[k] === "string") return p[k];
    }
    return null;
  }

  // ---- event rendering -----------------------------------------------------
  const COLORS = ["#7c3aed", "#0e7490", "#b45309", "#be185d", "#15803d", "#1d4ed8", "#9333ea", "#c2410c"];
  function colorOf(s) { // FNV-1a, so that similar ids get different colours
    let h = 0x811c9dc5;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
    return COLORS[(h >>> 0) % COLORS.length];
  }
  function agentName(id) { return String(id || "").replace(/^agent:/, ""); }
  const timeFmt = new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  const shortFmt = new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit" });
  function fmtShort(ts) { const d = new Date(ts); return isNaN(d) ? "" : shortFmt.format(d); }
  function fmtTime(ts) {
    const d = new Date(ts);
    return isNaN(d) ? String(ts || "") : timeFmt.format(d);
  }

  function errorBody(p, m) {
    p = p || {};
    const d = p.details || {};
    const retry = [];
    if (d.will_retry) retry.push("will retry" + (d.next_attempt ? " as attempt " + d.next_attempt : ""));
    const rest = Object.assign({}, d);
    delete rest.will_retry; delete rest.next_attempt;
    return [
      el("div", { class: "card-title" }, el("span", { class: "code" }, p.code || "ERROR"),
        el("span", { class: "badge " + (p.retryable ? "yes" : "no") }, p.retryable ? "retryable" : "not retryable"),
        retry.length ? el("span", { class: "badge yes" }, retry.join(", ")) : null,
        m.attempt > 1 ? el("span", { class: "meta" }, "attempt " + m.attempt) : null),
      p.message ? el("div", { class: "text" }, p.message) : null,
      Object.keys(rest).length ? el("details", null, el("summary", { class: "meta" }, "details"), payloadNode(rest)) : null,
    ];
  }

  function decisionBody(p) {
    p = p || {};
    const scores = p.scores || {};
    const cands = Array.isArray(p.candidates) ? p.candidates : [];
    const max = Math.max(1e-9, ...cands.map((c) => Number(scores[c]) || 0));
    const rejected = p.rejected && typeof p.rejected === "object" ? p.rejected : {};
    return [
      el("div", { class: "card-title" }, "Routed to ", el("span", { class: "author" }, String(p.selected || "?")),
        el("span", { class: "meta" }, (p.eligible || cands.length) + " eligible of " + (p.considered || cands.length + Object.keys(rejected).length) + " considered")),
      p.reason ? el("div", { class: "reason" }, String(p.reason)) : null,
      cands.length ? el("table", { class: "cands" },
        el("tr", null, el("th", null, "candidate"), el("th", null, "score"), el("th", null, "")),
        cands.map((c) => {
          const s = Number(scores[c]) || 0;
          return el("tr", { class: c === p.selected ? "selected-row" : "" }, el("td", null, String(c) + (c === p.selected ? " ✓" : "")),
            el("td", null, scores[c] === undefined ? "–" : String(scores[c])),
            el("td", null, el("span", { class: "bar", style: { width: Math.round(80 * s / max) + "px" } })));
        })) : null,
      Object.keys(rejected).length ? el("div", null, el("div", { class: "meta" }, "rejected"),
        el("dl", { class: "obj" }, Object.keys(rejected).map((a) => [el("dt", null, a), el("dd", null, String(rejected[a]))]))) : null,
    ];
  }

  function toolResultNode(ev) {
    const m = ev.message, p = m.payload || {};
    if (m.type === "tool.error") return el("div", { class: "card error" }, errorBody(p, m));
    const out = p.structuredContent !== undefined && p.structuredContent !== null ? p.structuredContent
      : p.content !== undefined ? p.content : p;
    return payloadNode(out);
  }
  function fillToolCall(callEl, ev) {
    const slot = callEl.querySelector(".tool-result");
    if (!slot) return;
    slot.textContent = "";
    slot.classList.remove("pending");
    add(slot, toolResultNode(ev));
    const st = callEl.querySelector(".tool-state");
    if (st) st.textContent = ev.message.type === "tool.error" ? "failed" : "done";
  }

  function progressBody(p) {
    if (p === null || typeof p !== "object") return [el("span", null, String(p))];
    let frac = null;
    if (typeof p.percent === "number") frac = p.percent / 100;
    else if (typeof p.progress === "number" && typeof p.total === "number" && p.total > 0) frac = p.progress / p.total;
    else if (typeof p.progress === "number" && p.progress <= 1) frac = p.progress;
    const text = p.message || p.step || p.status || "";
    const rest = Object.assign({}, p);
    for (const k of ["message", "step", "status", "percent"]) delete rest[k];
    return [
      frac !== null ? el("span", { class: "progress" }, el("span", { style: { width: Math.max(0, Math.min(100, Math.round(frac * 100))) + "%" } })) : null,
      text ? el("span", null, String(text)) : null,
      !text && frac === null ? el("span", { class: "str" }, JSON.stringify(p)) : null,
    ];
  }

  function taskLink(m) {
    if (!m.task_id || (S.view && S.view.kind === "task" && S.view.id === m.task_id)) return null;
    return el("a", { href: taskHash(m.task_id), class: "tag", title: m.task_id }, shortId(m.task_id));
  }

  function renderEvent(ev, prev) {
    const m = ev.message || {};
    const t = String(m.type || "");
    const from = (m.from && m.from.agent_id) || "";
    const p = m.payload;
    const who = agentName(from) || "?";
    const compact = prev && prev.message && prev.message.from && prev.message.from.agent_id === from &&
      t === "chat.message" && prev.message.type === "chat.message";
    const root = el("div", { class: "ev" + (compact ? " compact" : ""), "data-seq": ev.seq, "data-type": t, "data-id": m.id || "", id: "ev-" + ev.seq });
    root.appendChild(el("div", { class: "avatar", style: { background: colorOf(from) }, "aria-hidden": "true" }, who.slice(0, 2).toUpperCase()));
    const body = el("div", { class: "ev-body" });
    root.appendChild(body);
    const to = Array.isArray(m.to) && m.to.length ? m.to.map((x) => agentName(x.agent_id)).join(", ") : "";
    const head = el("div", { class: "ev-head" }, el("span", { class: "author", title: from }, who),
      to ? el("span", { class: "meta" }, "→ " + to) : null,
      el("time", { class: "time", datetime: m.ts || ev.time, title: (m.ts || ev.time) + " · seq " + ev.seq }, fmtTime(m.ts || ev.time)),
      t !== "chat.message" ? el("span", { class: "tag" }, t) : null, taskLink(m));
    if (!compact) body.appendChild(head);

    switch (t) {
      case "chat.message": {
        const txt = chatText(p);
        add(body, txt !== null ? el("div", { class: "text" }, txt) : payloadNode(p));
        break;
      }
      case "chat.system":
        add(body, el("div", { class: "line" }, chatText(p) !== null ? chatText(p) : JSON.stringify(p)));
        break;
      case "task.request":
        add(body, el("div", { class: "card" },
          el("div", { class: "card-title" }, "Task request", m.payload_type ? el("span", { class: "tag" }, m.payload_type) : null,
            Array.isArray(m.requires) && m.requires.length ? el("span", { class: "meta" }, "requires " + m.requires.join(", ")) : null,
            m.parent_task_id ? el("span", { class: "meta" }, "subtask of ", el("a", { href: taskHash(m.parent_task_id) }, shortId(m.parent_task_id))) : null),
          payloadNode(p)));
        break;
      case "task.result":
        add(body, el("div", { class: "card result" },
          el("div", { class: "card-title" }, "Result", m.payload_type ? el("span", { class: "tag" }, m.payload_type) : null),
          payloadNode(p)));
        break;
      case "task.accept":
        add(body, el("div", { class: "line" }, "accepted the task" + (m.attempt > 1 ? " (attempt " + m.attempt + ")" : "")));
        break;
      case "task.progress":
        add(body, el("div", { class: "line" }, progressBody(p)));
        break;
      case "task.error": case "task.timeout": case "task.cancel": case "routing.failure": case "tool.error":
        if (t === "tool.error" && p && p.details && p.details.call_id) {
          add(body, el("div", { class: "line" }, "✗ tool " + ((p.details.name) || "") + " failed: " + (p.code || "")));
        } else add(body, el("div", { class: "card error" }, errorBody(p, m)));
        break;
      case "routing.decision":
        add(body, el("div", { class: "card decision" }, decisionBody(p)));
        break;
      case "task.question": {
        const card = el("div", { class: "card question", "data-question": (p && p.question_id) || "" });
        if (p && typeof p.question_id === "string") S.questionEls.set(p.question_id, [ev, card]);
        fillQuestion(card, ev);
        add(body, card);
        break;
      }
      case "task.answer":
        add(body, el("div", { class: "line" }, "answered ", el("span", { class: "tag" }, shortId(p && p.question_id)), ": ",
          el("span", { class: "q-answer" }, answerText(p && p.value))));
        break;
      case "tool.call": {
        const args = p && typeof p === "object" && "args" in p ? p.args : (p && p.arguments) || p;
        const name = (p && (p.name || p.tool)) || "tool";
        const det = el("details", { class: "card tool", "data-call": m.id },
          el("summary", null, "⚙ " + name + " ", p && p.tool ? el("span", { class: "tag" }, String(p.tool)) : null, " ",
            el("span", { class: "meta tool-state" }, "running…")),
          el("div", { class: "section-label" }, "arguments"), payloadNode(args),
          el("div", { class: "section-label" }, "result"), el("div", { class: "tool-result pending" }, "waiting for the result…"));
        add(body, det);
        S.callEls.set(m.id, det);
        const r = S.results.get(m.id);
        if (r) fillToolCall(det, r);
        break;
      }
      case "tool.result": {
        const cid = p && p.call_id;
        add(body, el("details", { class: "line" }, el("summary", null, "↳ result of " + ((p && p.name) || "tool") + (cid ? "" : "")),
          toolResultNode(ev)));
        break;
      }
      case "agent.register": case "agent.update": case "agent.heartbeat": case "x.clutch.agent.remove":
        add(body, el("div", { class: "line" }, t.replace(/^x\.clutch\./, "").replace("agent.", "agent ") + (p && p.agent_id ? " " + p.agent_id : "")));
        break;
      default:
        add(body, el("details", null, el("summary", { class: "meta" }, "payload"), payloadNode(p)));
    }
    if (Array.isArray(m.attachments) && m.attachments.length) add(body, attachmentsNode(m.attachments));
    return root;
  }

  // ---- attachments ----------------------------------------------------------
  // An artifact_ref attachment is a button: it fetches GET v1/artifacts/{ref}
  // with the key in the Authorization header (never in a URL), makes the
  // bytes a Blob of the artifact's media type and offers it through an
  // object URL; a small text or JSON artifact is also shown inline, as text.
  const ARTIFACT_RE = /^artifact:sha256:[0-9a-f]{64}$/;
  function fmtSize(n) {
    n = Number(n);
    if (!(n >= 0)) return "";
    return n < 1024 ? n + " B" : n < 1 << 20 ? (n / 1024).toFixed(1) + " KiB" : (n / (1 << 20)).toFixed(1) + " MiB";
  }
  function isText(mt) {
    mt = String(mt || "").toLowerCase().split(";")[0].trim();
    return mt.startsWith("text/") || mt === "application/json" || mt.endsWith("+json") ||
      mt === "application/x-ndjson" || mt === "application/xml" || mt.endsWith("+xml") || mt === "application/yaml";
  }
  function fileName(a) {
    const n = String(a.name || "").replace(/[\/\\\u0000-\u001f]/g, "_").trim();
    return n || String(a.ref || "artifact").replace(/^artifact:sha256:/, "").slice(0, 16);
  }
  function attachmentsNode(list) {
    return el("div", { class: "attachments" }, list.slice(0, 50).map((a) => {
      a = a && typeof a === "object" ? a : {};
      const ref = String(a.ref || "");
      const info = [a.media_type ? String(a.media_type) : "", a.size ? fmtSize(a.size) : ""].filter(Boolean).join(" · ");
      if (!ARTIFACT_RE.test(ref)) {
        return el("div", { class: "attachment", title: ref }, el("span", { class: "att-name" }, "📎 " + String(a.name || ref || "attachment")),
          info ? el("span", { class: "meta" }, info) : null, a.kind && a.kind !== "artifact_ref" ? el("span", { class: "tag" }, String(a.kind)) : null);
      }
      const box = el("div", { class: "attachment", "data-ref": ref, "data-state": "idle" });
      const btn = el("button", { type: "button", class: "att-btn", title: "Download " + ref }, "📎 " + fileName(a));
      btn.addEventListener("click", () => openArtifact(box, a));
      add(box, [btn, info ? el("span", { class: "meta" }, info) : null, el("span", { class: "att-status meta", role: "status" })]);
      return box;
    }));
  }
  async function openArtifact(box, a) {
    if (box.dataset.state === "loading") return;
    if (box.dataset.state === "ready" && box.querySelector("a.att-save")) { box.querySelector("a.att-save").click(); return; }
    const status = box.querySelector(".att-status");
    box.dataset.state = "loading";
    status.className = "att-status meta";
    status.textContent = "fetching…";
    const gen = S.gen;
    let blob, type;
    try {
      const res = await fetch(API + "/artifacts/" + encodeURIComponent(a.ref), {
        headers: { "Authorization": "Bearer " + S.key }, cache: "no-store" });
      if (res.status === 401) { signOut("Your API key was not accepted."); return; }
      if (!res.ok) {
        let body = null;
        try { body = await res.json(); } catch (_) { body = null; }
        throw new APIError(res.status, body);
      }
      type = res.headers.get("Content-Type") || a.media_type || "application/octet-stream";
      blob = new Blob([await res.blob()], { type });
    } catch (err) {
      box.dataset.state = "error";
      status.className = "att-status error-text";
      status.textContent = "could not fetch: " + (err.code ? err.code + ": " : "") + (err.message || String(err)) + (err.status ? " (HTTP " + err.status + ")" : "");
      return;
    }
    if (gen !== S.gen) return; // the reader moved on; the object URL would outlive its view
    const url = URL.createObjectURL(blob);
    S.blobURLs.push(url);
    const save = el("a", { class: "att-save", href: url, download: fileName(a), type }, "save");
    status.textContent = "";
    add(status, [fmtSize(blob.size) + " · ", save]);
    box.dataset.size = String(blob.size);
    // "ready" once the preview is in place: a reader (or a test) that
    // waits for it finds the text there.
    if (isText(type) && blob.size <= PREVIEW_MAX) {
      let text = await blob.text();
      if (/json/i.test(type)) { try { text = JSON.stringify(JSON.parse(text), null, 2); } catch (_) { /* shown as sent */ } }
      const old = box.querySelector(".att-preview");
      if (old) old.remove();
      box.appendChild(el("pre", { class: "att-preview json" }, text));
      box.dataset.state = "ready";
    } else {
      box.dataset.state = "ready";
      save.click();
    }
  }

  // ---- questions: a person in the loop (docs/protocol.md §2.7) -------------
  // A task.question is a card. While it waits and this key may answer it
  // (GET questions says may_answer), the card holds its form: a button per
  // choice, approve / reject / edit for an approval, fields from a flat
  // object schema, a JSON box for any other schema, a text box otherwise.
  // Its answer is POSTed to questions/{id}/answer; the card turns into the
  // answer when the task.answer arrives. The sidebar lists what waits for
  // this key.
  function answerText(v) {
    if (v === undefined) return "";
    if (typeof v === "string") return v;
    if (v && typeof v === "object" && typeof v.decision === "string") {
      return v.decision + (v.reason ? " — " + v.reason : "") + (v.arguments !== undefined ? " " + JSON.stringify(v.arguments) : "");
    }
    return JSON.stringify(v);
  }
  function whoText(q) {
    const w = q.who || {};
    const parts = [];
    if (w.requester) parts.push("the requester");
    if (Array.isArray(w.agents)) parts.push(...w.agents.map(agentName));
    if (Array.isArray(w.scopes)) parts.push(...w.scopes.map((s) => "scope " + s));
    return parts.length ? parts.join(", ") : "the requester";
  }
  function refreshQuestion(id) {
    const x = S.questionEls.get(id);
    if (x) fillQuestion(x[1], x[0]);
  }
  function refreshQuestions() { for (const id of S.questionEls.keys()) refreshQuestion(id); }
  function fillQuestion(card, ev) {
    const q = (ev.message && ev.message.payload) || {};
    const id = String(q.question_id || "");
    const answer = S.answers.get(id);
    const w = S.waiting.get(id);
    const mine = !answer && !w && S.sent.has(id);
    const state = answer || mine ? "answered" : w ? "open" : S.waitingLoaded && ev.seq <= S.waitingSeq ? "closed" : "loading";
    if (card.dataset.state === state && state !== "open") return;
    if (state === "open" && card.dataset.state === "open" && card.dataset.may === String(!!w.may_answer)) return; // keep what is typed
    card.dataset.state = state;
    card.dataset.may = w ? String(!!w.may_answer) : "";
    card.textContent = "";
    const approval = q.kind === "approval";
    add(card, [
      el("div", { class: "card-title" }, approval ? "Approval needed" : "Question",
        el("span", { class: "meta" }, "for " + whoText(q)),
        q.deadline ? el("span", { class: "meta", title: q.deadline }, "answer by " + fmtTime(q.deadline)) : null),
      el("div", { class: "q-text" }, String(q.text || "")),
      q.details && Object.keys(q.details).length ? el("details", { open: approval ? true : undefined },
        el("summary", { class: "meta" }, approval ? "what would run" : "details"), payloadNode(q.details)) : null,
    ]);
    if (mine) {
      add(card, el("div", { class: "q-status" }, "Answered by you: ", el("span", { class: "q-answer" }, answerText(S.sent.get(id)))));
      return;
    }
    if (answer) {
      const a = answer.message;
      add(card, el("div", { class: "q-status" }, "Answered by ", el("span", { class: "author" }, agentName(a.from && a.from.agent_id)), ": ",
        el("span", { class: "q-answer" }, answerText(a.payload && a.payload.value))));
      return;
    }
    if (state === "closed") { add(card, el("div", { class: "q-status" }, "No longer waits: the task ended or moved on.")); return; }
    if (state === "loading") return;
    if (!w.may_answer) { add(card, el("div", { class: "q-status" }, "Waiting for " + whoText(q) + ".")); return; }
    add(card, answerForm(q));
  }
  function answerForm(q) {
    const form = el("form", { class: "q-form" });
    const status = el("div", { class: "q-status", role: "status" });
    const send = async (value) => {
      for (const b of form.querySelectorAll("button")) b.disabled = true;
      status.className = "q-status";
      status.textContent = "sending…";
      try {
        await api("/questions/" + encodeURIComponent(q.question_id) + "/answer", { method: "POST", body: { value } });
        S.sent.set(q.question_id, value);
        status.textContent = "answered; the task goes on";
        form.dataset.sent = "true";
        scheduleWaiting();
      } catch (err) {
        status.className = "q-status error-text";
        status.textContent = (err.code ? err.code + ": " : "") + err.message;
        for (const b of form.querySelectorAll("button")) b.disabled = false;
      }
    };
    const button = (text, cls, fn) => {
      const b = el("button", { type: "button", class: "q-btn " + (cls || "") }, text);
      b.addEventListener("click", fn);
      return b;
    };
    form.addEventListener("submit", (e) => e.preventDefault());
    if (q.kind === "approval") {
      const reason = el("input", { class: "q-reason", placeholder: "reason (for a rejection)", "aria-label": "reason" });
      const args = q.details && q.details.arguments !== undefined ? JSON.stringify(q.details.arguments, null, 2) : "{}";
      const edit = el("textarea", { class: "q-edit", "aria-label": "edited arguments", hidden: true });
      edit.value = args;
      let editing = false;
      const editBtn = button("Edit…", "secondary q-do-edit", () => {
        if (!editing) { editing = true; edit.hidden = false; editBtn.textContent = "Run with these arguments"; edit.focus(); return; }
        let parsed;
        try { parsed = JSON.parse(edit.value); } catch (err) { status.className = "q-status error-text"; status.textContent = "the arguments are not JSON: " + err.message; return; }
        send({ decision: "edit", arguments: parsed });
      });
      add(form, [button("Approve", "q-approve", () => send({ decision: "approve" })),
        button("Reject", "danger q-reject", () => send(reason.value.trim() ? { decision: "reject", reason: reason.value.trim() } : { decision: "reject" })),
        reason, editBtn, edit]);
    } else if (Array.isArray(q.choices) && q.choices.length) {
      add(form, q.choices.map((c) => button(String(c), "q-choice", () => send(c))));
    } else if (q.schema && flatSchema(q.schema)) {
      const props = q.schema.properties || {};
      const inputs = Object.keys(props).map((k) => {
        const sp = props[k] || {};
        let input;
        if (Array.isArray(sp.enum)) input = el("select", { name: k }, sp.enum.map((v) => el("option", { value: String(v) }, String(v))));
        else if (sp.type === "boolean") input = el("input", { type: "checkbox", name: k });
        else input = el("input", { name: k, type: sp.type === "number" || sp.type === "integer" ? "number" : "text",
          step: sp.type === "integer" ? "1" : sp.type === "number" ? "any" : undefined });
        return [k, sp, el("label", null, (sp.title || k) + (Array.isArray(q.schema.required) && q.schema.required.includes(k) ? " *" : ""), input)];
      });
      add(form, inputs.map((x) => x[2]));
      add(form, button("Answer", "q-submit", () => {
        const v = {};
        for (const [k, sp, label] of inputs) {
          const input = label.querySelector("input, select");
          if (sp.type === "boolean") v[k] = input.checked;
          else if (input.value === "") continue;
          else if (sp.type === "number" || sp.type === "integer") v[k] = Number(input.value);
          else v[k] = input.value;
        }
        send(v);
      }));
    } else if (q.schema) {
      const box = el("textarea", { class: "q-json", "aria-label": "answer (JSON)", placeholder: "the answer, as JSON" });
      add(form, [box, button("Answer", "q-submit", () => {
        let v;
        try { v = JSON.parse(box.value); } catch (err) { status.className = "q-status error-text"; status.textContent = "the answer is not JSON: " + err.message; return; }
        send(v);
      })]);
    } else {
      const box = el("input", { class: "q-input", "aria-label": "answer", placeholder: "your answer" });
      box.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.isComposing) { e.preventDefault(); if (box.value.trim()) send(box.value); } });
      add(form, [box, button("Answer", "q-submit", () => { if (box.value.trim()) send(box.value); })]);
    }
    return el("div", null, form, status);
  }
  // flatSchema reports whether an object schema's properties are all
  // scalars: it becomes a form.
  function flatSchema(sch) {
    if (!sch || sch.type !== "object" || !sch.properties || typeof sch.properties !== "object") return false;
    return Object.values(sch.properties).every((p) => p && (["string", "number", "integer", "boolean"].includes(p.type) || Array.isArray(p.enum)));
  }
  let waitingTimer = 0;
  function scheduleWaiting() {
    clearTimeout(waitingTimer);
    waitingTimer = setTimeout(loadWaiting, 150);
  }
  async function loadWaiting() {
    let body;
    const seq = S.lastSeq, gen = S.gen;
    try { body = await api("/questions"); } catch (_) { return; }
    if (!S.key) return;
    S.waitingSeq = gen === S.gen ? seq : -1;
    S.waiting = new Map();
    for (const w of (body && body.questions) || []) if (w && w.question && typeof w.question.question_id === "string") S.waiting.set(w.question.question_id, w);
    S.waitingLoaded = true;
    renderWaiting();
    refreshQuestions();
  }
  function renderWaiting() {
    const ul = $("waiting");
    ul.textContent = "";
    const mine = Array.from(S.waiting.values()).filter((w) => w.may_answer);
    const n = $("waiting-count");
    n.hidden = !mine.length;
    n.textContent = String(mine.length);
    ul.dataset.count = String(mine.length);
    if (!mine.length) { ul.appendChild(el("li", { class: "none" }, "Nothing waits for you.")); return; }
    for (const w of mine) {
      const q = w.question;
      ul.appendChild(el("li", { "data-question": q.question_id },
        el("a", { href: "#/question/" + encodeURIComponent(q.question_id), title: q.text },
          String(q.text || ""),
          el("span", { class: "meta" }, (q.kind === "approval" ? "approval · " : "") + agentName(w.asked_by) +
            (q.deadline ? " · by " + fmtTime(q.deadline) : "")))));
    }
  }

  // openQuestion shows one waiting question on its own ("#/question/<id>",
  // the sidebar's links): its card and form, built from GET questions, so
  // a person may answer a question of a task it may not read (one that
  // names it, or its scope).
  async function openQuestion(id) {
    resetView({ kind: "question", id });
    const gen = S.gen;
    renderChannels();
    $("view-title").textContent = "Question";
    $("view-sub").textContent = "loading…";
    $("empty").hidden = true;
    $("compose").hidden = true;
    await loadWaiting();
    if (gen !== S.gen) return;
    const w = S.waiting.get(id);
    $("view-sub").textContent = "";
    if (!w) {
      $("events").appendChild(el("div", { class: "empty" }, S.sent.has(id) ? "Answered by you: " + answerText(S.sent.get(id)) : "This question does not wait for an answer (any more)."));
    } else {
      add($("view-sub"), ["asked by " + agentName(w.asked_by) + " for " + agentName(w.requester) + " in ", el("a", { href: taskHash(w.task_id) }, "task " + shortId(w.task_id))]);
      const ev = { seq: 0, message: { payload: w.question } };
      const card = el("div", { class: "card question", "data-question": id });
      S.questionEls.set(id, [ev, card]);
      fillQuestion(card, ev);
      $("events").appendChild(el("div", { class: "ev question-view" }, el("div"), el("div", { class: "ev-body" }, card)));
    }
    $("events").dataset.loaded = "true";
  }

  // ---- the message pane ----------------------------------------------------
  // A reader scrolled up is told about new events instead of being moved.
  function showUnseen() {
    const b = $("new-events");
    b.hidden = S.unseen === 0;
    b.textContent = S.unseen === 1 ? "1 new event ↓" : S.unseen + " new events ↓";
  }
  $("new-events").addEventListener("click", () => { scrollBottom(); S.unseen = 0; showUnseen(); });
  function atBottom() { const p = $("pane"); return p.scrollHeight - p.scrollTop - p.clientHeight < 40; }
  function scrollBottom() { const p = $("pane"); p.scrollTop = p.scrollHeight; }

  // ingest records an event's data (runs, tool results) before it is shown.
  function ingest(ev) {
    const m = ev.message || {};
    if (m.run_id) S.runs.set(m.run_id, true);
    if (!S.threadRun && m.run_id) S.threadRun = m.run_id;
    if (m.meta && typeof m.meta.ui_channel === "string") S.channel = m.meta.ui_channel;
    if (m.type === "task.answer" && m.payload && typeof m.payload.question_id === "string") {
      S.answers.set(m.payload.question_id, ev);
      S.waiting.delete(m.payload.question_id);
      refreshQuestion(m.payload.question_id);
    }
    if ((m.type === "tool.result" || m.type === "tool.error") && m.payload) {
      const cid = m.payload.call_id || (m.payload.details && m.payload.details.call_id);
      if (cid) {
        S.results.set(cid, ev);
        const c = S.callEls.get(cid);
        if (c) fillToolCall(c, ev);
      }
    }
  }

  // Events sit in chunks of up to WINDOW; a chunk off screen is skipped by
  // layout as one box (content-visibility), so a long thread costs little.
  function renderRange(lo, hi) {
    const chunk = el("div", { class: "chunk" });
    for (let i = lo; i < hi; i++) chunk.appendChild(renderEvent(S.events[i], i > 0 ? S.events[i - 1] : null));
    return chunk;
  }
  function lastChunk() {
    const evs = $("events");
    let c = evs.lastElementChild;
    if (!c || c.childElementCount >= WINDOW) { c = el("div", { class: "chunk" }); evs.appendChild(c); }
    return c;
  }
  function updateOlder() {
    const o = $("older");
    o.hidden = S.from === 0;
    o.textContent = S.from ? S.from + " earlier events: scroll up to see them" : "";
    $("events").dataset.from = String(S.from);
  }
  // showOlder puts the previous STEP events in front of the shown ones,
  // keeping what the reader looks at in place.
  function showOlder() {
    if (S.from === 0) return;
    const pane = $("pane");
    const lo = Math.max(0, S.from - STEP);
    const before = pane.scrollHeight;
    const evs = $("events");
    evs.insertBefore(renderRange(lo, S.from), evs.firstChild);
    S.from = lo;
    pane.scrollTop += pane.scrollHeight - before;
    updateOlder();
  }
  $("pane").addEventListener("scroll", () => {
    if ($("pane").scrollTop < 300) showOlder();
    if (S.unseen && atBottom()) { S.unseen = 0; showUnseen(); }
  }, { passive: true });

  function appendLive(ev) {
    if (ev.seq <= S.lastSeq) return; // resumed streams never show an event twice
    const stick = atBottom();
    ingest(ev);
    S.events.push(ev);
    S.lastSeq = ev.seq;
    lastChunk().appendChild(renderEvent(ev, S.events.length > 1 ? S.events[S.events.length - 2] : null));
    $("events").dataset.count = String(S.events.length);
    $("events").dataset.last = String(S.lastSeq);
    $("empty").hidden = true;
    if (stick) scrollBottom();
    else { S.unseen++; showUnseen(); }
    const t = ev.message && ev.message.type || "";
    if (t.startsWith("task.") || t === "routing.decision") scheduleTree();
    if (t === "task.question" || t === "task.answer" || t === "task.cancel" || t === "task.error" || t === "task.result") scheduleWaiting();
  }

  // ---- views ----------------------------------------------------------------
  function resetView(view) {
    stopStream();
    S.gen++;
    S.view = view;
    S.events = []; S.lastSeq = 0; S.from = 0; S.runs = new Map(); S.threadRun = ""; S.channel = "";
    S.results = new Map(); S.callEls = new Map(); S.unseen = 0; showUnseen();
    S.answers = new Map(); S.questionEls = new Map(); S.waitingSeq = -1;
    for (const u of S.blobURLs) URL.revokeObjectURL(u);
    S.blobURLs = [];
    const evs = $("events");
    evs.textContent = "";
    evs.dataset.count = "0"; evs.dataset.last = "0"; evs.dataset.loaded = "false";
    evs.dataset.view = view ? view.kind + ":" + view.id : "";
    $("older").hidden = true;
    $("tree-body").textContent = "";
    $("compose-error").textContent = "";
    $("compose").hidden = false;
  }

  async function openView(view) {
    resetView(view);
    const gen = S.gen;
    renderChannels();
    const isThread = view.kind === "thread";
    $("view-title").textContent = view.id ? (isThread ? "Thread " : "Task ") + view.id : "New thread";
    $("view-sub").textContent = "";
    $("empty").hidden = !!view.id;
    $("empty").textContent = view.id ? "" : "Write the first message below; choose a channel for it.";
    $("compose-channel").hidden = !!view.id;
    if (!view.id) { $("events").dataset.loaded = "true"; return; }
    $("view-sub").textContent = "loading…";
    const t0 = performance.now();
    const base = (isThread ? "/threads/" : "/tasks/") + encodeURIComponent(view.id) + "/events?";
    let after = 0;
    try {
      for (;;) {
        const body = await api(base + qs({ after, limit: PAGE }));
        if (gen !== S.gen) return;
        const list = (body && body.events) || [];
        for (const ev of list) { if (ev.seq > S.lastSeq) { ingest(ev); S.events.push(ev); S.lastSeq = ev.seq; } }
        $("view-sub").textContent = "loading… " + S.events.length + " events";
        if (!body || !body.next_after || !list.length) break;
        after = body.next_after;
      }
    } catch (err) {
      if (gen !== S.gen) return;
      $("view-sub").textContent = "";
      $("events").appendChild(el("div", { class: "empty" }, "Could not load this " + view.kind + ": " + err.message));
      return;
    }
    S.from = Math.max(0, S.events.length - WINDOW);
    $("events").appendChild(renderRange(S.from, S.events.length));
    const evs = $("events");
    evs.dataset.count = String(S.events.length);
    evs.dataset.last = String(S.lastSeq);
    evs.dataset.loadMs = String(Math.round(performance.now() - t0));
    evs.dataset.loaded = "true";
    $("empty").hidden = S.events.length > 0;
    if (!S.events.length) { $("empty").hidden = false; $("empty").textContent = "No events yet."; }
    updateOlder();
    updateSub();
    if (view.kind === "task") {
      const target = S.events.find((e) => e.message && e.message.type === "task.request" && e.message.task_id === view.id);
      const n = target && document.getElementById("ev-" + target.seq);
      if (n) { n.classList.add("target"); n.scrollIntoView({ block: "center" }); } else scrollBottom();
    } else scrollBottom();
    loadTree();
    loadWaiting();
    startStream(gen);
  }
  function updateSub() {
    const parts = [S.events.length + " events"];
    if (S.channel) parts.unshift("#" + S.channel);
    const first = S.events[0] && S.events[0].message;
    if (S.view.kind === "task" && first && first.thread_id) {
      $("view-sub").textContent = "";
      add($("view-sub"), [parts.join(" · ") + " · in ", el("a", { href: threadHash(first.thread_id) }, "thread " + shortId(first.thread_id))]);
      return;
    }
    $("view-sub").textContent = parts.join(" · ");
  }

  // ---- task tree ---------------------------------------------------------------
  function scheduleTree() {
    clearTimeout(S.treeTimer);
    S.treeTimer = setTimeout(loadTree, 400);
  }
  function treeNode(n) {
    const st = String(n.status || "").replace(/^task\./, "");
    return el("li", { class: "tnode", "data-task": n.task_id },
      el("a", { href: taskHash(n.task_id), title: n.task_id + " · " + st },
        el("span", { class: "dot st-" + statusClass(st) }), el("span", null, n.payload_type || "task"),
        el("span", { class: "tid" }, shortId(n.task_id))),
      el("div", { class: "tinfo" }, [agentName(n.agent_id) || "unrouted", st, n.attempts > 1 ? n.attempts + " attempts" : "",
        n.error && n.error.code ? String(n.error.code) : ""].filter(Boolean).join(" · ")),
      Array.isArray(n.children) && n.children.length ? el("ul", null, n.children.map(treeNode)) : null);
  }
  function statusClass(st) {
    if (/result|complet|success|done/.test(st)) return "completed";
    if (/cancel/.test(st)) return "cancelled";
    if (/timeout|timed/.test(st)) return "timed_out";
    if (/waiting|question/.test(st)) return "waiting";
    if (/error|fail/.test(st)) return "failed";
    return "running";
  }
  async function loadTree() {
    const gen = S.gen, view = S.view;
    if (!view || !view.id) return;
    const box = $("tree-body");
    const sources = view.kind === "task" ? [["/tasks/" + encodeURIComponent(view.id) + "/tree", ""]]
      : Array.from(S.runs.keys()).filter((r) => r !== "run_registry").slice(-8).map((r) => ["/runs/" + encodeURIComponent(r) + "/tree", r]);
    const parts = [];
    for (const [path, run] of sources) {
      let body;
      try { body = await api(path); } catch (_) { continue; }
      if (gen !== S.gen) return;
      const tasks = (body && body.tasks) || [];
      if (!tasks.length) continue;
      parts.push(el("div", { class: "run-head", title: run || body.run_id || "" }, "run " + shortId(run || body.run_id || "")));
      parts.push(el("ul", null, tasks.map(treeNode)));
    }
    box.textContent = "";
    add(box, parts.length ? parts : el("div", { class: "meta" }, "No tasks in this view."));
  }

  // ---- live stream (SSE read with fetch, so the key travels in a header) --------
  function setConn(state) { const c = $("conn"); c.dataset.state = state; c.textContent = state; }
  function stopStream() { if (S.stream) { S.stream.abort(); S.stream = null; } setConn("idle"); }
  function startStream(gen) {
    const ctl = new AbortController();
    S.stream = ctl;
    let delay = 250;
    (async () => {
      while (!ctl.signal.aborted && gen === S.gen) {
        setConn(S.lastSeq && delay > 250 ? "reconnecting" : "connecting");
        try {
          const q = { after: S.lastSeq };
          q[S.view.kind] = S.view.id;
          const res = await fetch(API + "/stream?" + qs(q), {
            headers: { "Authorization": "Bearer " + S.key, "Accept": "text/event-stream", "Last-Event-ID": String(S.lastSeq) },
            signal: ctl.signal, cache: "no-store",
          });
          if (res.status === 401) { signOut("Your API key was not accepted."); return; }
          if (!res.ok || !res.body) throw new Error("stream: HTTP " + res.status);
          setConn("live");
          delay = 250;
          await readSSE(res.body, ctl.signal, gen);
        } catch (err) {
          if (ctl.signal.aborted) return;
        }
        if (ctl.signal.aborted || gen !== S.gen) return;
        setConn("reconnecting");
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 8000);
      }
    })();
  }
  async function readSSE(body, signal, gen) {
    const reader = body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += dec.decode(value, { stream: true });
        let mt;
        while ((mt = /\r?\n\r?\n/.exec(buf)) !== null) {
          const block = buf.slice(0, mt.index);
          buf = buf.slice(mt.index + mt[0].length);
          if (gen !== S.gen) return;
          handleSSE(block);
        }
      }
    } finally {
      try { reader.cancel(); } catch (_) { /* already closed */ }
    }
  }
  function handleSSE(block) {
    let event = "message", data = "";
    for (const line of block.split(/\r?\n/)) {
      if (!line || line[0] === ":") continue;
      const c = line.indexOf(":");
      const field = c < 0 ? line : line.slice(0, c);
      let val = c < 0 ? "" : line.slice(c + 1);
      if (val[0] === " ") val = val.slice(1);
      if (field === "event") event = val;
      else if (field === "data") data += (data ? "\n" : "") + val;
    }
    if (!data) return;
    if (event === "clutch.closed") throw new Error("closed by the server: " + data);
    let ev;
    try { ev = JSON.parse(data); } catch (_) { return; }
    if (ev && typeof ev.seq === "number" && ev.message) { appendLive(ev); updateSub(); }
  }

  // ---- compose -------------------------------------------------------------------
  function syncCompose() {
    const task = $("compose-type").value === "task.request";
    $("compose-ptype").hidden = !task;
    $("compose-requires").hidden = !task;
    $("compose-text").placeholder = task ? "Task input: JSON, or plain text sent as {\"text\": …}" : "Write a message (Enter sends, Shift+Enter for a new line)";
  }
  $("compose-type").addEventListener("change", syncCompose);
  $("compose-text").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("compose").requestSubmit(); }
  });
  $("compose").addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = $("compose-text").value;
    if (!text.trim() || !S.view) return;
    const type = $("compose-type").value;
    const msg = { type };
    if (type === "task.request") {
      let payload;
      try { payload = JSON.parse(text); } catch (_) { payload = { text }; }
      msg.payload = payload;
      const pt = $("compose-ptype").value.trim();
      if (pt) msg.payload_type = pt;
      const req = $("compose-requires").value.split(/[\s,]+/).filter(Boolean);
      if (req.length) msg.requires = req;
    } else msg.payload = { text };
    if (S.view.kind === "thread" && S.view.id) { msg.thread_id = S.view.id; if (S.threadRun && type === "chat.message") msg.run_id = S.threadRun; }
    if (S.view.kind === "task") {
      const first = S.events[0] && S.events[0].message;
      if (first) { msg.thread_id = first.thread_id; msg.run_id = first.run_id; }
      if (type === "task.request") msg.parent_task_id = S.view.id;
      else msg.task_id = S.view.id;
    }
    const ch = S.view.id ? S.channel : $("compose-channel").value.trim();
    if (ch) msg.meta = { ui_channel: ch };
    $("compose-send").disabled = true;
    $("compose-error").textContent = "";
    try {
      const res = await api("/messages", { method: "POST", body: msg });
      $("compose-text").value = "";
      if (!S.view.id && res && res.thread_id) { location.hash = threadHash(res.thread_id); loadThreads(); }
    } catch (err) {
      $("compose-error").textContent = (err.code ? err.code + ": " : "") + err.message;
    } finally {
      $("compose-send").disabled = false;
    }
  });
  $("new-thread").addEventListener("click", () => { location.hash = "#/new"; });

  // ---- routing ----------------------------------------------------------------------
  function route() {
    const h = location.hash.replace(/^#\/?/, "");
    const m = /^(thread|task|question)\/(.+)$/.exec(h);
    if (m && m[1] === "question") {
      let id;
      try { id = decodeURIComponent(m[2]); } catch (_) { id = m[2]; }
      openQuestion(id);
    } else if (m) {
      let id;
      try { id = decodeURIComponent(m[2]); } catch (_) { id = m[2]; }
      openView({ kind: m[1], id });
    } else if (h === "new") openView({ kind: "thread", id: "" });
    else {
      resetView(null);
      $("view-title").textContent = "Pick a thread";
      $("view-sub").textContent = "";
      $("empty").hidden = false;
      $("empty").textContent = "Choose a channel on the left, or start a new thread.";
      $("events").dataset.loaded = "true";
      renderChannels();
    }
  }
  window.addEventListener("hashchange", () => { if (S.key) route(); });

  function start() {
    timers.forEach(clearInterval);
    resetThreads();
    loadThreads();
    loadAgents();
    loadWaiting();
    timers = [setInterval(loadThreads, 10000), setInterval(loadAgents, 10000), setInterval(loadWaiting, 10000)];
    route();
  }
  syncCompose();
  if (S.key) { $("signin").hidden = true; start(); } else showSignIn("");
})();
