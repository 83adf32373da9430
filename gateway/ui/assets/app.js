// Clutch web UI. Plain JavaScript, no build step. Every piece of data from
// the server enters the page through text nodes (el() below), never as markup.
"use strict";
(function () {
  const API = (document.querySelector('meta[name="clutch-api"]').content || "v1").replace(/\/+$/, "");
  const KEY_STORE = "clutch.apiKey";
  const KEY_REFUSED = "The server did not accept your key: it may have restarted with a new one. Sign in with the current key.";
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
  // announce says something to screen readers, through the one live
  // region (the pane itself is not live: every event would be read out).
  function announce(text) { const n = document.getElementById("announce"); n.textContent = ""; setTimeout(() => { n.textContent = text; }, 50); }
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
    callEls: new Map(),  // tool call event id -> the element showing it
    openCalls: [],       // tool calls without an outcome yet: {msg, cid, task, name}
    endedTasks: new Set(), // tasks whose end is in the view
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
    runFolds: new Map(), // run id -> what the conversation's run card shows (foldRun)
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
    if (res.status === 401) { signOut(KEY_REFUSED); throw new APIError(401, body); }
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
    stopWatch();
    setBanner("");
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
  // Below 768 px the sidebar is a drawer: the menu button opens it, and
  // following a link, the scrim or Escape closes it.
  function setDrawer(open) {
    document.body.classList.toggle("drawer-open", open);
    $("menu-toggle").setAttribute("aria-expanded", String(open));
    $("scrim").hidden = !open;
    if (open) { const f = $("sidebar").querySelector("a, button"); if (f) f.focus(); }
  }
  $("menu-toggle").addEventListener("click", () => setDrawer(!document.body.classList.contains("drawer-open")));
  $("scrim").addEventListener("click", () => setDrawer(false));
  $("sidebar").addEventListener("click", (e) => { if (e.target.closest("a")) setDrawer(false); });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && document.body.classList.contains("drawer-open")) { setDrawer(false); $("menu-toggle").focus(); }
  });

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
  // The reader picks the order within a channel: newest started first
  // (stable: a busy thread does not jump) or latest activity first; kept
  // in localStorage. Channels are in name order, plain threads last.
  const ORDER_STORE = "clutch.order";
  function mergeThreads(list) {
    for (const t of list) if (t && typeof t.id === "string") S.threadMap.set(t.id, t);
    const key = localStorage.getItem(ORDER_STORE) === "updated" ? "last_seq" : "first_seq";
    S.threads = Array.from(S.threadMap.values()).sort((a, b) => (Number(b[key]) || 0) - (Number(a[key]) || 0) || (a.id < b.id ? -1 : 1));
  }
  $("thread-order").value = localStorage.getItem(ORDER_STORE) === "updated" ? "updated" : "created";
  $("thread-order").addEventListener("change", () => {
    localStorage.setItem(ORDER_STORE, $("thread-order").value);
    mergeThreads([]);
    keepFocus(renderChannels);
  });
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
    keepFocus(renderChannels);
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
      if (isReserved(t.id)) continue; // Clutch's own records: not a conversation
      const ch = t.channel || "threads";
      if (!groups.has(ch)) groups.set(ch, []);
      groups.get(ch).push(t);
    }
    const nav = $("channels");
    nav.textContent = "";
    const names = Array.from(groups.keys()).sort((a, b) => (a === "threads") - (b === "threads") || a.localeCompare(b));
    for (const ch of names) {
      const list = groups.get(ch);
      nav.appendChild(el("div", { class: "channel" }, el("h2", null, "# " + ch),
        list.map((t) => {
          const active = S.view && S.view.kind === "thread" && S.view.id === t.id;
          const st = summaryStatus(t);
          const word = st === "failed" || st === "timed_out" ? "failed" : st === "waiting" ? "waits" : st === "running" ? "running" : "";
          return el("a", { href: threadHash(t.id), class: "thread-link st-" + st + (active ? " active" : ""),
            title: (t.title ? t.title + " · " : "") + t.id + " · " + st + " · updated " + t.updated, "data-thread": t.id, "data-key": "thread-" + t.id },
          el("span", { class: "dot", "aria-hidden": "true" }), el("span", { class: "name" }, t.title || shortId(t.id)),
          word ? el("span", { class: "badge-st st-" + st }, word) : el("span", { class: "count", title: t.events + " events" }, fmtShort(t.updated)));
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
    let renamed = false;
    S.agents = (body && body.agents) || [];
    for (const a of (body && body.agents) || []) {
      const c = a.card || {};
      const dn = c.display && typeof c.display.name === "string" && c.display.name.trim();
      if (dn && c.agent_id && agentNames.get(c.agent_id) !== dn) { agentNames.set(c.agent_id, dn); renamed = true; }
      const name = (c.display && c.display.name) || c.agent_id || "?";
      const rate = typeof a.success_rate === "number" ? Math.round(a.success_rate * 100) + "%" : "";
      ul.appendChild(el("li", { title: (c.agent_id || "") + (a.online ? " · online" : " · offline"), "data-agent": c.agent_id },
        el("span", { class: "dot " + (a.online ? "on" : "off"), "aria-label": a.online ? "online" : "offline" }),
        el("a", { class: "name", href: "#/agent/" + encodeURIComponent(c.agent_id || ""), "data-key": "agent-" + c.agent_id }, name),
        el("span", { class: "load", title: "tasks in flight · recent success rate" },
          (a.in_flight || 0) + " running" + (rate ? " · " + rate : ""))));
    }
    if (renamed && S.view) { // names shown before the cards came
      if (S.view.kind === "run" && S.trace) keepFocus(renderTrace);
      else if (S.view.kind === "home") keepFocus(renderHome);
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
  // agentName is an agent's display name (its card's, once GET agents has
  // been read), else its id without "agent:": one name everywhere.
  const agentNames = new Map();
  function agentName(id) { return agentNames.get(id) || String(id || "").replace(/^agent:/, ""); }
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
      p.explanation || p.reason ? el("div", { class: "reason", title: p.reason || "" }, String(p.explanation || p.reason)) : null,
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

  // modelCallText says what a model call (x.clutch.model_call,
  // docs/protocol.md §2.3.2) used: "model M (provider): N tokens in, K out;
  // asks for 2 tool calls; 640 ms", or how it failed.
  function modelCallText(p) {
    p = p && typeof p === "object" ? p : {};
    const n = (v) => (typeof v === "number" && v > 0 ? v : 0);
    let s = "model " + String(p.model || "?") + (p.provider ? " (" + String(p.provider) + ")" : "");
    const parts = [];
    if (n(p.input_tokens) || n(p.output_tokens)) parts.push(n(p.input_tokens) + " tokens in, " + n(p.output_tokens) + " out");
    if (n(p.tool_calls)) parts.push("asks for " + n(p.tool_calls) + " tool call" + (n(p.tool_calls) === 1 ? "" : "s"));
    else if (p.finish_reason) parts.push(String(p.finish_reason));
    if (n(p.duration_ms)) parts.push(n(p.duration_ms) + " ms");
    if (p.error && typeof p.error === "object") parts.push("failed: " + String(p.error.code || "") + (p.error.message ? " " + String(p.error.message) : ""));
    return parts.length ? s + ": " + parts.join("; ") : s;
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
    const root = el("div", { class: "ev" + (compact ? " compact" : "") + (folds(m) ? " folded" : ""), "data-seq": ev.seq, "data-type": t, "data-id": m.id || "", id: "ev-" + ev.seq });
    root.appendChild(el("div", { class: "avatar", style: { background: colorOf(from) }, "aria-hidden": "true" }, who.slice(0, 2).toUpperCase()));
    const body = el("div", { class: "ev-body" });
    root.appendChild(body);
    const to = Array.isArray(m.to) && m.to.length ? m.to.map((x) => agentName(x.agent_id)).join(", ") : "";
    const head = el("div", { class: "ev-head" }, from ? el("a", { class: "author", title: from, href: "#/agent/" + encodeURIComponent(from) }, who) : el("span", { class: "author" }, who),
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
        if (!m.parent_task_id && m.run_id && S.view && S.view.kind === "thread") {
          // The run's card in the conversation: its ask, status, agents
          // and duration, kept up to date; the trace is one click away.
          const card = el("a", { class: "card run-card", href: "#/run/" + encodeURIComponent(m.run_id), "data-run": m.run_id });
          const f = S.runFolds.get(m.run_id);
          if (f) { f.el = card; fillRunCard(f); }
          add(body, card);
        }
        add(body, el("div", { class: "card" + (!m.parent_task_id && S.view && S.view.kind === "thread" ? " detail-only" : "") },
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
        else if (S.endedTasks.has(m.task_id)) noToolResult(det);
        break;
      }
      case "tool.result": {
        const cid = p && p.call_id;
        add(body, el("details", { class: "line" }, el("summary", null, "↳ result of " + ((p && p.name) || "tool") + (cid ? "" : "")),
          toolResultNode(ev)));
        break;
      }
      case "x.clutch.model_call":
        add(body, el("div", { class: "line model-call" }, modelCallText(p)));
        break;
      case "agent.register": case "agent.update": case "agent.heartbeat": case "x.clutch.agent.remove": case "x.clutch.agent.offline":
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
      if (res.status === 401) { signOut(KEY_REFUSED); return; }
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
    const before = Number(ul.dataset.count || 0);
    if (mine.length > before && ul.dataset.count !== undefined) announce(mine.length === 1 ? "A question waits for you." : mine.length + " questions wait for you.");
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

  // ---- runs: the home and a run's trace -------------------------------------
  // The home lists recent runs by their ask (GET runs: each summary's title,
  // status, duration, agents, failure); "#/run/<id>" is a run's trace: its
  // task tree with durations and a waterfall, a failure banner naming the
  // step that failed, and, for the selected task, its input, routing, tool
  // calls, questions and outcome, with cancel and retry.
  const STATUS = {
    completed: ["✓", "Completed"], failed: ["✗", "Failed"], timed_out: ["✗", "Timed out"],
    cancelled: ["■", "Cancelled"], running: ["●", "Running"], pending: ["○", "Pending"],
    waiting: ["?", "Waiting for a person"], active: ["·", "Active"],
  };
  function statusPill(st) {
    const s = STATUS[st] || ["·", String(st || "unknown")];
    return el("span", { class: "pill st-" + (st || "unknown"), "data-status": st || "" },
      el("span", { class: "pill-icon", "aria-hidden": "true" }, s[0]), s[1]);
  }
  // isReserved mirrors protocol.Reserved: Clutch's own system records.
  function isReserved(id) {
    id = String(id || "");
    if (id === "run_registry" || id === "thr_registry" || id === "task_registry") return true;
    const m = /^(run_|run:|thr_|thread:|task_|task:)(.*)$/.exec(id);
    return !!m && (/^clutch[_:]/.test(m[2]) || /^rules:/.test(m[2]) && m[1].endsWith(":") || m[1] === "run:" && /^webhook:/.test(m[2]));
  }
  function summaryStatus(s) { return s.waiting > 0 && s.status === "running" ? "waiting" : s.status; }
  function fmtDur(ms) {
    if (!(ms >= 0)) return "";
    if (ms < 1000) return Math.round(ms) + " ms";
    const s = ms / 1000;
    if (s < 60) return (s < 10 ? s.toFixed(1) : Math.round(s)) + " s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + " min " + Math.round(s % 60) + " s";
    return Math.floor(m / 60) + " h " + (m % 60) + " min";
  }
  const msOf = (t) => { const d = new Date(t); return isNaN(d) ? NaN : d.getTime(); };
  // payloadTitle is a request's ask in a line: the text of its payload.
  function payloadTitle(m) {
    const p = m && m.payload;
    let t = typeof p === "string" ? p : null;
    if (t === null && p && typeof p === "object") {
      for (const k of ["title", "text", "query", "message", "content", "summary", "prompt", "goal"]) if (typeof p[k] === "string" && p[k].trim()) { t = p[k]; break; }
    }
    if (t === null) t = (m && m.payload_type) || "task";
    t = t.replace(/\s+/g, " ").trim();
    return t.length > 120 ? t.slice(0, 119) + "…" : t;
  }
  // keepFocus re-renders with fn and puts the focus back on the element
  // with the same data-key, so a live update never loses the reader's place.
  function keepFocus(fn) {
    const a = document.activeElement;
    const key = a && a.dataset ? a.dataset.key : "";
    fn();
    if (key) { const n = document.querySelector('[data-key="' + CSS.escape(key) + '"]'); if (n && n !== document.activeElement) n.focus(); }
  }

  S.home = { runs: [], filter: "all", loading: false };
  async function openHome() {
    resetView({ kind: "home", id: "" });
    const gen = S.gen;
    renderChannels();
    $("view-title").textContent = "Runs";
    $("view-sub").textContent = "loading…";
    $("empty").hidden = true;
    $("compose").hidden = true;
    document.body.dataset.view = "home";
    await loadHome(gen);
    if (gen === S.gen) $("events").dataset.loaded = "true";
  }
  async function loadHome(gen) {
    let body;
    try { body = await api("/runs?" + qs({ limit: 100 })); } catch (err) {
      if (gen !== S.gen) return;
      $("view-sub").textContent = "";
      $("events").textContent = "";
      $("events").appendChild(el("div", { class: "empty" }, err.status === 403 ? "This key may not list runs. Questions for you are on the left." : "Could not load the runs: " + err.message));
      return;
    }
    if (gen !== S.gen) return;
    S.home.runs = ((body && body.runs) || []).filter((s) => s && !isReserved(s.id));
    keepFocus(renderHome);
  }
  function renderHome() {
    const runs = S.home.runs;
    const count = (st) => runs.filter((s) => summaryStatus(s) === st || (st === "failed" && s.status === "timed_out")).length;
    const n = { running: count("running"), waiting: count("waiting"), failed: count("failed") };
    $("view-sub").textContent = runs.length + " recent runs · " + n.running + " running · " + n.waiting + " waiting · " + n.failed + " failed";
    const box = $("events");
    box.textContent = "";
    const filters = [["all", "All", runs.length], ["running", "Running", n.running], ["waiting", "Waiting", n.waiting], ["failed", "Failed", n.failed]];
    const bar = el("div", { class: "filters", role: "group", "aria-label": "Show runs" }, filters.map(([k, label, c]) => {
      const b = el("button", { type: "button", class: "filter", "data-key": "filter-" + k, "aria-pressed": String(S.home.filter === k) }, label + " ", el("span", { class: "count" }, String(c)));
      b.addEventListener("click", () => { S.home.filter = k; keepFocus(renderHome); });
      return b;
    }));
    box.appendChild(bar);
    let shown = runs;
    if (S.home.filter === "failed") shown = runs.filter((s) => s.status === "failed" || s.status === "timed_out");
    else if (S.home.filter !== "all") shown = runs.filter((s) => summaryStatus(s) === S.home.filter);
    if (!shown.length) {
      box.appendChild(el("div", { class: "empty" }, runs.length ? "No run is " + S.home.filter + "." : "No runs yet. Start one from a thread (+ New thread), the API or the CLI."));
      return;
    }
    box.appendChild(el("ul", { class: "runs", "aria-label": "Runs" }, shown.map(runRow)));
  }
  function runRow(s) {
    const st = summaryStatus(s);
    const end = s.status === "running" ? Date.now() : msOf(s.updated);
    const agents = Array.isArray(s.agents) ? s.agents.map(agentName) : [];
    const f = s.failure;
    return el("li", { class: "run-row st-" + st, "data-run": s.id },
      el("a", { href: "#/run/" + encodeURIComponent(s.id), "data-key": "run-" + s.id },
        el("span", { class: "run-title" }, s.title || "Run " + shortId(s.id)),
        el("span", { class: "run-meta" }, statusPill(st),
          el("span", { class: "meta", title: "started " + s.created }, fmtShort(s.created) + " · " + fmtDur(end - msOf(s.created))),
          agents.length ? el("span", { class: "meta" }, agents.join(", ") + (s.agents_more ? " +" + s.agents_more : "")) : null,
          el("span", { class: "meta" }, s.tasks + (s.tasks === 1 ? " task" : " tasks"))),
        f && (s.status === "failed" || s.status === "timed_out") ? el("span", { class: "run-fail" }, "✗ " + (f.code || "ERROR") + (f.message ? ": " + f.message : "") + (f.agent_id ? " — " + agentName(f.agent_id) : "")) : null));
  }

  // ---- an agent's profile ("#/agent/<id>") -----------------------------------
  // The card (description, capabilities with tags and tools, limits), its
  // liveness and load, and the recent runs it took part in, failures first.
  S.agents = [];
  async function openAgent(id) {
    resetView({ kind: "agent", id });
    const gen = S.gen;
    renderChannels();
    $("view-title").textContent = agentName(id);
    $("view-sub").textContent = "loading…";
    $("empty").hidden = true;
    $("compose").hidden = true;
    await loadAgents();
    if (!S.home.runs.length) await loadHomeRuns();
    if (gen !== S.gen) return;
    renderAgent(id);
    $("events").dataset.loaded = "true";
  }
  async function loadHomeRuns() {
    try {
      const body = await api("/runs?" + qs({ limit: 100 }));
      S.home.runs = ((body && body.runs) || []).filter((s) => s && !isReserved(s.id));
    } catch (_) { /* the profile says so */ }
  }
  function renderAgent(id) {
    const a = S.agents.find((x) => x.card && x.card.agent_id === id);
    const box = $("events");
    box.textContent = "";
    if (!a) {
      $("view-sub").textContent = "";
      box.appendChild(el("div", { class: "empty" }, "No such agent, or this key may not list agents."));
      return;
    }
    const c = a.card;
    $("view-title").textContent = agentName(id);
    $("view-sub").textContent = "";
    add($("view-sub"), [el("span", { class: "pill " + (a.online ? "st-completed" : "st-cancelled") }, a.online ? "● online" : "○ offline"), " ",
      copyButton(id, id)]);
    const rate = typeof a.success_rate === "number" ? Math.round(a.success_rate * 100) + "%" : "–";
    const runs = S.home.runs.filter((s) => (Array.isArray(s.agents) && s.agents.includes(id)) || (s.failure && s.failure.agent_id === id));
    const fails = runs.filter((s) => s.failure && s.failure.agent_id === id);
    const caps = Array.isArray(c.capabilities) ? c.capabilities : [];
    box.appendChild(el("div", { class: "profile" },
      c.display && c.display.desc ? el("p", { class: "desc" }, c.display.desc) : null,
      el("dl", { class: "obj stats" }, [
        [el("dt", null, "tasks in flight"), el("dd", null, String(a.in_flight || 0))],
        [el("dt", null, "recent success rate"), el("dd", null, rate)],
        c.limits && c.limits.max_concurrency ? [el("dt", null, "max concurrency"), el("dd", null, String(c.limits.max_concurrency))] : null,
        c.limits && c.limits.max_runtime_sec ? [el("dt", null, "max runtime"), el("dd", null, fmtDur(c.limits.max_runtime_sec * 1000))] : null,
      ]),
      el("h2", null, "Capabilities"),
      caps.length ? el("ul", { class: "caps" }, caps.map((cp) => el("li", null, el("span", { class: "tag" }, cp.id + (cp.version ? " " + cp.version : "")),
        Array.isArray(cp.tags) && cp.tags.length ? el("span", { class: "meta" }, " tags: " + cp.tags.join(", ")) : null,
        Array.isArray(cp.tools) && cp.tools.length ? el("span", { class: "meta" }, " tools: " + cp.tools.join(", ")) : null,
        cp.trust_level ? el("span", { class: "meta" }, " trust: " + cp.trust_level) : null))) : el("p", { class: "meta" }, "None declared."),
      el("h2", null, "Recent failures"),
      fails.length ? el("ul", { class: "runs" }, fails.map(runRow)) : el("p", { class: "meta" }, "None among the recent runs."),
      el("h2", null, "Recent runs"),
      runs.length ? el("ul", { class: "runs" }, runs.slice(0, 20).map(runRow)) : el("p", { class: "meta" }, "None among the recent runs.")));
  }

  // ---- tool calls and their outcomes (docs/protocol.md §2.3.1) -------------
  // A call's id is its payload's call_id, else the tool.call event's own id;
  // an outcome names it in call_id (tool.result) or details.call_id
  // (tool.error). An outcome pairs with the open call of its task that has
  // its id; one whose id names no call stands alone. Only an outcome with
  // no id at all (an old event) pairs with its task's oldest open call of
  // the same name.
  function callID(m) { const p = m.payload || {}; return typeof p.call_id === "string" && p.call_id ? p.call_id : m.id; }
  function outcomeID(m) { const p = m.payload || {}; return p.call_id || (p.details && p.details.call_id) || ""; }
  // pairCall returns the index in open (entries {id, task, name}) of the
  // call the outcome m answers, -1 when none.
  function pairCall(open, m) {
    const id = outcomeID(m), name = (m.payload && m.payload.name) || "";
    if (id) return open.findIndex((c) => c.task === m.task_id && c.id === id);
    return open.findIndex((c) => c.task === m.task_id && (!name || !c.name || c.name === name));
  }

  // ---- the trace of one run --------------------------------------------------
  S.trace = null; // {tree, tasks: Map, selected, root}
  async function openRun(id) {
    resetView({ kind: "run", id });
    const gen = S.gen;
    renderChannels();
    document.body.dataset.view = "run";
    $("view-title").textContent = "Run " + shortId(id);
    $("view-sub").textContent = "loading…";
    $("empty").hidden = true;
    $("compose").hidden = true;
    const t0 = performance.now();
    const base = "/runs/" + encodeURIComponent(id) + "/events?";
    let after = 0;
    try {
      for (;;) {
        const body = await api(base + qs({ after, limit: PAGE }));
        if (gen !== S.gen) return;
        const list = (body && body.events) || [];
        for (const ev of list) if (ev.seq > S.lastSeq) { S.events.push(ev); S.lastSeq = ev.seq; }
        if (!body || !body.next_after || !list.length) break;
        after = body.next_after;
      }
    } catch (err) {
      if (gen !== S.gen) return;
      $("view-sub").textContent = "";
      $("events").appendChild(el("div", { class: "empty" }, err.status === 404 ? "No such run, or this key may not read it." : "Could not load this run: " + err.message));
      $("events").dataset.loaded = "true";
      return;
    }
    S.trace = { selected: "", tree: [] };
    await loadTrace(gen);
    if (gen !== S.gen) return;
    $("events").dataset.loadMs = String(Math.round(performance.now() - t0));
    $("events").dataset.loaded = "true";
    loadWaiting();
    startStream(gen);
  }
  async function loadTrace(gen) {
    let body;
    try { body = await api("/runs/" + encodeURIComponent(S.view.id) + "/tree"); } catch (_) { body = null; }
    if (gen !== S.gen) return;
    S.trace.tree = (body && body.tasks) || [];
    keepFocus(renderTrace);
  }
  let traceTimer = 0;
  function scheduleTrace() {
    clearTimeout(traceTimer);
    const gen = S.gen;
    traceTimer = setTimeout(() => { if (gen === S.gen && S.trace) loadTrace(gen); }, 200);
  }
  // foldTasks folds the run's events into what each task did.
  function foldTasks(events) {
    const tasks = new Map();
    const get = (id) => {
      let t = tasks.get(id);
      if (!t) { t = { id, tools: [], attempts: [], progress: null, decision: null, questions: [], answers: new Map(), events: [] }; tasks.set(id, t); }
      return t;
    };
    for (const ev of events) {
      const m = ev.message || {};
      if (!m.task_id) continue;
      const t = get(m.task_id);
      t.events.push(ev);
      const p = m.payload || {};
      switch (m.type) {
        case "task.request": if (!t.req) t.req = ev; break;
        case "routing.decision": t.decision = ev; break;
        case "task.accept": t.attempts.push({ attempt: m.attempt || 1, agent: m.from && m.from.agent_id, at: msOf(m.ts) }); break;
        case "task.progress": t.progress = ev; break;
        case "tool.call": t.tools.push({ id: callID(m), task: m.task_id, name: p.name || p.tool || "tool", tool: p.tool, args: "args" in p ? p.args : p.arguments, at: msOf(m.ts), call: ev, result: null }); break;
        case "tool.result": case "tool.error": {
          const open = t.tools.filter((x) => !x.result);
          const i = pairCall(open, m);
          let c = i >= 0 ? open[i] : null;
          if (!c) { c = { id: outcomeID(m) || m.id, name: p.name || "tool", args: undefined, at: msOf(m.ts), call: null, result: null }; t.tools.push(c); }
          c.result = ev;
          break;
        }
        case "task.question": t.questions.push(ev); break;
        case "task.answer": if (p.question_id) t.answers.set(p.question_id, ev); break;
        case "task.result": case "task.cancel": case "task.timeout": t.end = ev; break;
        case "task.error": if (!(p.details && p.details.will_retry)) t.end = ev; else t.retried = ev; break;
      }
    }
    return tasks;
  }
  function nodeStatus(n) { return n.status === "running" && n.state === "task.question" ? "waiting" : n.status; }
  function renderTrace() {
    const tr = S.trace;
    const tasks = foldTasks(S.events);
    const flat = [];
    // walk lists the tasks depth first and reports whether one of them
    // failed: a row knows, in one pass, that a step inside it failed.
    const walk = (list, depth, parent) => {
      let any = false;
      for (const n of list) {
        const row = { n, depth, parent, failedBelow: false };
        flat.push(row);
        row.failedBelow = walk(n.children || [], depth + 1, n);
        any = any || row.failedBelow || n.status === "failed" || n.status === "timed_out";
      }
      return any;
    };
    walk(tr.tree, 0, null);
    const box = $("events");
    box.textContent = "";
    if (!flat.length) { box.appendChild(el("div", { class: "empty" }, "This run has no tasks yet.")); $("view-sub").textContent = S.events.length + " events"; return; }
    const root = flat[0].n;
    const rootT = tasks.get(root.task_id) || {};
    const starts = flat.map((x) => msOf(x.n.started)).filter((v) => !isNaN(v));
    const t0 = Math.min(...starts);
    const now = Date.now();
    const endOf = (n) => n.ended ? msOf(n.ended) : now;
    const t1 = Math.max(t0 + 1, ...flat.map((x) => endOf(x.n)));
    $("view-title").textContent = rootT.req ? payloadTitle(rootT.req.message) : "Run " + shortId(S.view.id);
    $("view-sub").textContent = "";
    const agents = Array.from(new Set(flat.map((x) => x.n.agent_id).filter(Boolean)));
    add($("view-sub"), [statusPill(nodeStatus(root)), " " + fmtDur(endOf(root) - msOf(root.started)) + " · " + flat.length + (flat.length === 1 ? " task" : " tasks") +
      (agents.length ? " · " + agents.map(agentName).join(", ") : "") + " · ",
      rootT.req && rootT.req.message.thread_id ? el("a", { href: threadHash(rootT.req.message.thread_id) }, "conversation") : null]);
    // The failure, once, at the top: the deepest failed task is where it started.
    const failed = flat.filter((x) => x.n.status === "failed" || x.n.status === "timed_out");
    const origin = failed.find((x) => !x.failedBelow) || failed[0];
    if (origin) {
      const e = origin.n.error || {};
      const t = tasks.get(origin.n.task_id) || {};
      const show = el("button", { type: "button", class: "link", "data-key": "show-failure" }, "show the step");
      show.addEventListener("click", () => selectTask(origin.n.task_id));
      if (!tr.announced) { tr.announced = true; announce("This run failed: " + (e.code || origin.n.status) + (e.message ? ", " + e.message : "")); }
      box.appendChild(el("div", { class: "banner fail" },
        el("strong", null, "✗ Failed: "), (t.req ? payloadTitle(t.req.message) : origin.n.payload_type || "a task"),
        origin.n.agent_id ? " — " + agentName(origin.n.agent_id) : "", el("span", { class: "code" }, " " + (e.code || origin.n.status.toUpperCase())),
        e.message ? el("span", null, ": " + e.message) : null, " ", show));
    }
    if (!tr.selected || !flat.some((x) => x.n.task_id === tr.selected)) tr.selected = (origin || flat[0]).n.task_id;
    const list = el("ol", { class: "trace", "aria-label": "Tasks of the run" }, flat.map((x) => {
      const n = x.n, st = nodeStatus(n), t = tasks.get(n.task_id) || {};
      const s = msOf(n.started), e = endOf(n);
      const left = isNaN(s) ? 0 : (s - t0) / (t1 - t0) * 100, width = isNaN(s) ? 0 : Math.max(0.5, (e - s) / (t1 - t0) * 100);
      const b = el("button", { type: "button", class: "trow st-" + st + (x.failedBelow ? " has-fail" : ""), "data-task": n.task_id, "data-key": "task-" + n.task_id,
        "aria-current": n.task_id === tr.selected ? "true" : undefined, style: { paddingLeft: (8 + x.depth * 18) + "px" } },
        statusPill(st),
        el("span", { class: "tname" }, t.req ? payloadTitle(t.req.message) : n.payload_type || "task"),
        el("span", { class: "tagent" }, n.agent_id ? agentName(n.agent_id) : "unrouted"),
        el("span", { class: "tdur" }, fmtDur(e - s)),
        el("span", { class: "wf", "aria-hidden": "true" }, el("span", { class: "wf-bar st-" + st, style: { marginLeft: left + "%", width: width + "%" } })));
      b.addEventListener("click", () => selectTask(n.task_id));
      return el("li", null, b);
    }));
    const sel = flat.find((x) => x.n.task_id === tr.selected);
    box.appendChild(el("div", { class: "trace-grid" }, el("div", { class: "trace-list" }, list),
      el("section", { class: "trace-detail", "aria-label": "The selected task", "data-task": sel.n.task_id }, taskDetail(sel.n, sel.parent, tasks.get(sel.n.task_id) || { tools: [], attempts: [], questions: [], answers: new Map(), events: [] }))));
  }
  function selectTask(id) {
    if (!S.trace) return;
    S.trace.selected = id;
    keepFocus(renderTrace);
    const d = document.querySelector(".trace-detail");
    if (d && window.innerWidth < 900) d.scrollIntoView({ block: "start" });
  }
  function copyButton(id, label) {
    const b = el("button", { type: "button", class: "copy", title: "Copy " + id, "aria-label": "Copy " + (label || "id") + " " + id }, label || shortId(id));
    b.addEventListener("click", async () => {
      try { await navigator.clipboard.writeText(id); b.dataset.copied = "true"; b.textContent = "copied"; } catch (_) { b.textContent = id; }
    });
    return b;
  }
  function taskDetail(n, parent, t) {
    const st = nodeStatus(n);
    const s = msOf(n.started), e = n.ended ? msOf(n.ended) : Date.now();
    const out = [];
    out.push(el("h2", null, t.req ? payloadTitle(t.req.message) : n.payload_type || "task", " ", statusPill(st)));
    let up = null;
    if (parent) {
      up = el("button", { type: "button", class: "link", "data-key": "parent-" + parent.task_id }, agentName(parent.agent_id) || "its parent");
      up.addEventListener("click", () => selectTask(parent.task_id));
    }
    out.push(el("div", { class: "meta ids" }, "task ", copyButton(n.task_id, shortId(n.task_id)),
      " · " + (n.agent_id ? agentName(n.agent_id) : "not routed") + " · " + fmtDur(e - s) + (n.attempts > 1 ? " · " + n.attempts + " attempts" : ""),
      up ? [" · delegated by ", up] : null));
    const acts = el("div", { class: "actions" });
    if (st === "running" || st === "waiting" || st === "pending") acts.appendChild(actButton("Cancel", "cancel", n.task_id));
    if (st === "failed" || st === "timed_out") acts.appendChild(actButton("Retry", "retry", n.task_id));
    if (acts.childElementCount) out.push(acts);
    if (st === "failed" || st === "timed_out" || st === "cancelled") {
      const ep = (t.end && t.end.message.payload) || n.error || {};
      out.push(el("div", { class: "card error" }, errorBody(ep, (t.end && t.end.message) || {})));
    }
    if (t.req) out.push(el("div", { class: "section-label" }, "Asked"), payloadNode(t.req.message.payload));
    if (t.decision) {
      const d = t.decision.message.payload || {};
      out.push(el("div", { class: "section-label" }, "Routing"), el("div", { class: "why" }, d.explanation || d.reason || ""),
        el("details", null, el("summary", { class: "meta" }, "candidates and scores"), el("div", { class: "card decision" }, decisionBody(d))));
    }
    if (t.tools.length) {
      out.push(el("div", { class: "section-label" }, "Tool calls"));
      for (const c of t.tools) out.push(toolCard(c, n));
    }
    if (t.progress && !n.ended) out.push(el("div", { class: "section-label" }, "Progress"), el("div", { class: "line" }, progressBody(t.progress.message.payload)));
    for (const q of t.questions) {
      const qid = q.message.payload && q.message.payload.question_id;
      const a = t.answers.get(qid);
      if (a) S.answers.set(qid, a);
      const card = el("div", { class: "card question", "data-question": qid || "" });
      if (qid) S.questionEls.set(qid, [q, card]);
      fillQuestion(card, q);
      out.push(el("div", { class: "section-label" }, "Question"), card);
    }
    if (t.end && t.end.message.type === "task.result") out.push(el("div", { class: "section-label" }, "Result"), el("div", { class: "card result" }, payloadNode(t.end.message.payload)));
    out.push(el("details", { class: "raw" }, el("summary", { class: "meta" }, "raw events (" + t.events.length + ")"),
      el("pre", { class: "json" }, t.events.map((ev) => JSON.stringify(ev.message, null, 2)).join("\n"))));
    return out;
  }
  function toolCard(c, n) {
    const r = c.result && c.result.message;
    const failed = r && r.type === "tool.error";
    const state = r ? (failed ? "failed" : "done") : n.ended ? "no result recorded" : "running…";
    const dur = r && !isNaN(c.at) ? fmtDur(msOf(r.ts) - c.at) : "";
    return el("details", { class: "card tool tool-" + (r ? (failed ? "error" : "done") : n.ended ? "lost" : "running"), "data-call": c.id },
      el("summary", null, "⚙ " + c.name + " ", c.tool ? el("span", { class: "tag" }, String(c.tool)) : null, " ",
        el("span", { class: "meta tool-state" }, state + (dur ? " · " + dur : ""))),
      c.args !== undefined ? [el("div", { class: "section-label" }, "arguments"), payloadNode(c.args)] : null,
      r ? [el("div", { class: "section-label" }, failed ? "error" : "result"), toolResultNode(c.result)] : null);
  }
  function actButton(label, what, taskID) {
    const b = el("button", { type: "button", class: "act act-" + what, "data-key": what + "-" + taskID }, label);
    const status = el("span", { class: "meta", role: "status" });
    b.addEventListener("click", async () => {
      b.disabled = true;
      status.textContent = what === "cancel" ? "cancelling…" : "retrying…";
      try {
        await api("/tasks/" + encodeURIComponent(taskID) + "/" + what, { method: "POST" });
        status.textContent = what === "cancel" ? "cancelled" : "retried: a new attempt runs";
        scheduleTrace();
      } catch (err) {
        status.className = "error-text";
        status.textContent = (err.code ? err.code + ": " : "") + err.message;
        b.disabled = false;
      }
    });
    return el("span", null, b, " ", status);
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
    if (m.run_id && m.task_id) foldRun(m);
    if (m.type === "task.answer" && m.payload && typeof m.payload.question_id === "string") {
      S.answers.set(m.payload.question_id, ev);
      S.waiting.delete(m.payload.question_id);
      refreshQuestion(m.payload.question_id);
    }
    // Tool calls pair with their outcomes by pairCall; a task that ends
    // leaves its open calls without a result, never "running".
    if (m.type === "tool.call") {
      const p = m.payload || {};
      S.openCalls.push({ msg: m.id, id: callID(m), task: m.task_id, name: p.name || p.tool || "" });
    } else if ((m.type === "tool.result" || m.type === "tool.error") && m.payload) {
      const i = pairCall(S.openCalls, m);
      if (i >= 0) {
        const key = S.openCalls[i].msg;
        S.openCalls.splice(i, 1);
        S.results.set(key, ev);
        const c = S.callEls.get(key);
        if (c) fillToolCall(c, ev);
      }
    } else if (m.task_id && protocolEnds(m)) {
      S.endedTasks.add(m.task_id);
      for (const c of S.openCalls) if (c.task === m.task_id) { const e = S.callEls.get(c.msg); if (e) noToolResult(e); }
    }
  }
  function noToolResult(callEl) {
    const st = callEl.querySelector(".tool-state");
    if (st && st.textContent === "running…") st.textContent = "no result recorded";
    const slot = callEl.querySelector(".tool-result.pending");
    if (slot) slot.textContent = "the task ended without a result of this call";
  }

  // ---- the conversation: runs as cards -----------------------------------------
  // A thread reads as a conversation: chat, each run as one card (its ask,
  // status in words, agents, duration, a link to its trace), questions,
  // and the run's outcome. The protocol's bookkeeping (accepts, routing,
  // progress, tool calls, subtasks, retries) is folded away; "Show every
  // event" shows it all.
  function folds(m) {
    const t = m.type || "";
    if (t === "task.accept" || t === "task.progress" || t === "task.answer" || t.startsWith("routing.") || t.startsWith("tool.")) return true;
    if (t.startsWith("task.") && m.parent_task_id) return true; // a subtask's events: in the trace
    if (t === "task.error" && m.payload && m.payload.details && m.payload.details.will_retry) return true;
    return false;
  }
  function foldRun(m) {
    let f = S.runFolds.get(m.run_id);
    if (!f) { f = { run: m.run_id, root: "", ask: "", tasks: new Set(), agents: [], start: NaN, end: NaN, status: "running", failure: null, waiting: false, el: null }; S.runFolds.set(m.run_id, f); }
    const at = msOf(m.ts);
    if (m.type === "task.request") {
      f.tasks.add(m.task_id);
      if (!m.parent_task_id && !f.root) { f.root = m.task_id; f.ask = payloadTitle(m); f.start = at; }
    }
    if (m.type === "task.accept" && m.from && !f.agents.includes(m.from.agent_id)) f.agents.push(m.from.agent_id);
    if (m.task_id === f.root) {
      if (m.type === "task.question") f.waiting = true;
      if (m.type === "task.answer" || m.type === "task.accept") f.waiting = false;
      if (m.type === "task.accept") { f.status = "running"; f.failure = null; f.end = NaN; }
      if (protocolEnds(m)) {
        f.end = at;
        f.status = m.type === "task.result" ? "completed" : m.type === "task.cancel" ? "cancelled" : m.type === "task.timeout" ? "timed_out" : "failed";
        f.failure = f.status === "failed" || f.status === "timed_out" ? m.payload || {} : null;
      }
    }
    if (f.el) fillRunCard(f);
  }
  function fillRunCard(f) {
    const c = f.el;
    const st = f.waiting && f.status === "running" ? "waiting" : f.status;
    c.className = "card run-card st-" + st;
    c.textContent = "";
    const dur = (isNaN(f.end) ? Date.now() : f.end) - f.start;
    add(c, [el("div", { class: "card-title" }, statusPill(st), el("span", { class: "run-ask" }, f.ask || "a run")),
      el("div", { class: "meta" }, [f.agents.map(agentName).join(", ") || "not routed yet", f.tasks.size + (f.tasks.size === 1 ? " task" : " tasks"),
        isNaN(dur) ? "" : fmtDur(dur), "open the trace →"].filter(Boolean).join(" · ")),
      f.failure ? el("div", { class: "run-fail" }, "✗ " + (f.failure.code || "ERROR") + (f.failure.message ? ": " + f.failure.message : "")) : null]);
  }
  const ALL_STORE = "clutch.allEvents";
  function applyAllEvents() {
    const all = localStorage.getItem(ALL_STORE) === "1";
    document.body.dataset.allEvents = all ? "1" : "";
    const b = $("events-toggle");
    b.setAttribute("aria-pressed", String(all));
    b.textContent = all ? "Show the conversation" : "Show every event";
  }
  $("events-toggle").addEventListener("click", () => {
    localStorage.setItem(ALL_STORE, localStorage.getItem(ALL_STORE) === "1" ? "0" : "1");
    applyAllEvents();
  });

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
    if (S.view && S.view.kind === "run") {
      S.events.push(ev);
      S.lastSeq = ev.seq;
      const t = ev.message && ev.message.type || "";
      if (t === "task.question" || t === "task.answer" || t === "task.cancel" || t === "task.error" || t === "task.result") scheduleWaiting();
      scheduleTrace();
      return;
    }
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
    S.results = new Map(); S.callEls = new Map(); S.openCalls = []; S.endedTasks = new Set(); S.unseen = 0; showUnseen();
    S.answers = new Map(); S.questionEls = new Map(); S.waitingSeq = -1; S.trace = null; S.runFolds = new Map();
    document.body.dataset.view = view ? view.kind : "";
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
    const known = isThread && S.threadMap.get(view.id);
    $("view-title").textContent = !view.id ? "New thread" : known && known.title ? known.title : (isThread ? "Thread " : "Task ") + shortId(view.id);
    $("view-title").title = view.id || "";
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
      if (target) $("view-title").textContent = payloadTitle(target.message);
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
          if (res.status === 401) { signOut(KEY_REFUSED); return; }
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
  // eachSSE reads an SSE body and calls fn with each event's name and data
  // (comments and empty events skipped) until the body ends or fn returns
  // false; it throws when the server closes the stream with an error.
  async function eachSSE(body, fn) {
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
          if (!data) continue;
          if (event === "clutch.closed") throw new Error("closed by the server: " + data);
          let ev;
          try { ev = JSON.parse(data); } catch (_) { continue; }
          if (!ev || typeof ev.seq !== "number" || !ev.message) continue;
          if (fn(ev) === false) return;
        }
      }
    } finally {
      try { reader.cancel(); } catch (_) { /* already closed */ }
    }
  }
  function readSSE(body, signal, gen) {
    return eachSSE(body, (ev) => {
      if (gen !== S.gen) return false;
      appendLive(ev);
      updateSub();
    });
  }

  // ---- the live sidebar: one stream of everything the key may read -----------
  // It starts at the store's end (after=now) and resumes after the last seq
  // it saw; each event of a run refreshes the lists it changes (debounced),
  // so the sidebar and the home follow the team without polling. Its state
  // is the connection banner: reconnecting or offline disable Send.
  let watchCtl = null, listsTimer = 0, watchSeq = 0;
  function scheduleLists(kind) {
    clearTimeout(listsTimer);
    listsTimer = setTimeout(() => {
      loadThreads();
      if (S.view && S.view.kind === "home") loadHome(S.gen);
      if (kind === "q") loadWaiting();
    }, 120);
  }
  function setBanner(state) {
    const b = $("conn-banner");
    const text = { reconnecting: "Reconnecting to the server… what you see may be out of date.", offline: "You are offline. The page will catch up when the network is back." }[state] || "";
    b.hidden = !text;
    b.textContent = text;
    b.dataset.state = state;
    document.body.dataset.conn = state;
    if (!S.stream) setConn(state === "live" ? "live" : state ? "reconnecting" : "idle"); // no view stream: the page's one
    $("compose-send").disabled = !!text;
  }
  function stopWatch() { if (watchCtl) { watchCtl.abort(); watchCtl = null; } clearTimeout(listsTimer); }
  function startWatch() {
    stopWatch();
    const ctl = new AbortController();
    watchCtl = ctl;
    watchSeq = 0;
    let delay = 500;
    (async () => {
      while (!ctl.signal.aborted) {
        try {
          const res = await fetch(API + "/stream?" + qs({ after: watchSeq ? String(watchSeq) : "now" }), {
            headers: { "Authorization": "Bearer " + S.key, "Accept": "text/event-stream" }, signal: ctl.signal, cache: "no-store" });
          if (res.status === 401) { signOut(KEY_REFUSED); return; }
          if (res.status === 403) { setBanner("live"); return; } // a key that may not stream: nothing to follow
          if (!res.ok || !res.body) throw new Error("HTTP " + res.status);
          if (delay > 500) scheduleLists("q"); // catch up on what happened while away
          setBanner("live");
          delay = 500;
          await eachSSE(res.body, (ev) => {
            watchSeq = Math.max(watchSeq, ev.seq);
            const m = ev.message, t = String(m.type || "");
            if (isReserved(m.run_id) || t.startsWith("agent.")) return;
            scheduleLists(t === "task.question" || t === "task.answer" || protocolEnds(m) ? "q" : "");
          });
        } catch (_) {
          if (ctl.signal.aborted) return;
        }
        if (ctl.signal.aborted) return;
        setBanner(navigator.onLine === false ? "offline" : "reconnecting");
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 8000);
      }
    })();
  }
  function protocolEnds(m) {
    const t = m.type;
    if (t === "task.result" || t === "task.cancel" || t === "task.timeout") return true;
    return t === "task.error" && !(m.payload && m.payload.details && m.payload.details.will_retry);
  }
  window.addEventListener("offline", () => { if (S.key) setBanner("offline"); });
  window.addEventListener("online", () => { if (S.key) startWatch(); });

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
    const m = /^(thread|task|question|run|agent)\/(.+)$/.exec(h);
    let id = "";
    if (m) { try { id = decodeURIComponent(m[2]); } catch (_) { id = m[2]; } }
    if (m && m[1] === "question") openQuestion(id);
    else if (m && m[1] === "run") openRun(id);
    else if (m && m[1] === "agent") openAgent(id);
    else if (m) openView({ kind: m[1], id });
    else if (h === "new") openView({ kind: "thread", id: "" });
    else openHome();
  }
  window.addEventListener("hashchange", () => { if (S.key) route(); });

  function start() {
    timers.forEach(clearInterval);
    resetThreads();
    loadThreads();
    loadAgents();
    loadWaiting();
    startWatch();
    // The stream drives the lists; these are the safety net of a missed event.
    timers = [setInterval(loadThreads, 60000), setInterval(loadAgents, 15000), setInterval(loadWaiting, 60000)];
    route();
  }
  syncCompose();
  applyAllEvents();
  if (S.key) { $("signin").hidden = true; start(); } else showSignIn("");
})();
