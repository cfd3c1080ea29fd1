// flower's web page: runs on the left, the selected run as a live chat thread.
//
// Everything the agent or the server says is put into the DOM as text (textContent, text nodes):
// never as markup. The small Markdown subset (code fences, `code`, **bold**, _italic_) is applied
// by building elements around plain text, so no string from the server is ever parsed as HTML.
//
// One WebSocket (/ws) carries the runs list and the selected run's thread. Each message carries
// the sequence number of its latest change; the page remembers the highest it applied and, after
// a dropped connection or a server restart, asks for the changes after it — nothing twice,
// nothing missed.
"use strict";

const FINAL = new Set(["done", "failed", "stopped"]);
const $ = (id) => document.getElementById(id);

const state = {
  ws: null,
  backoff: 500,
  runs: new Map(),          // run id -> run (from the server's runs list)
  selected: null,           // run id shown
  messages: new Map(),      // message id -> message (current version)
  nodes: new Map(),         // message id -> its <li>
  lastSeq: 0,               // highest message seq applied for the selected run
  eventsLast: 0,            // event-log cursor of the activity lines
  activity: [],             // [{seq, tool, text, sub}]
  activityDropped: false,   // some of the run's older tool activity is no longer kept
  status: null,             // the status message (rendered at the top, not in the thread)
  plan: null,               // the agent's plan (a live message with plan: true), a checklist in the status card
  skew: 0,                  // server clock minus this browser's, in seconds (from each thread frame)
  toastSeen: new Map(),     // text -> time shown (the same words twice in a row are shown once)
  routinesKey: "",          // the routines list as last drawn (JSON)
  asks: new Map(),          // card id -> the selected run's ask as GET …/asks lists it (kind, plan text)
  asking: new Set(),        // card ids whose kind is being looked up
};

// ---- small DOM helpers -----------------------------------------------------------------------
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function inline(parent, line) {
  // `code`, **bold**, _italic_; everything else is a text node.
  const parts = line.split(/(`[^`]+`|\*\*[^*]+\*\*|\b_[^_\n]+_\b)/);
  for (const part of parts) {
    if (!part) continue;
    if (part.length > 2 && part.startsWith("`") && part.endsWith("`")) parent.append(el("code", "", part.slice(1, -1)));
    else if (part.length > 4 && part.startsWith("**") && part.endsWith("**")) parent.append(el("strong", "", part.slice(2, -2)));
    else if (part.length > 2 && part.startsWith("_") && part.endsWith("_")) parent.append(el("em", "", part.slice(1, -1)));
    else parent.append(document.createTextNode(part));
  }
}

function renderText(text) {
  const box = el("div", "text");
  const chunks = String(text || "").split(/^```[^\n]*\n?/m);
  chunks.forEach((chunk, i) => {
    if (i % 2 === 1) {  // inside a fence
      const pre = el("pre");
      pre.append(el("code", "", chunk.replace(/\n$/, "")));
      box.append(pre);
      return;
    }
    for (const para of chunk.split(/\n{2,}/)) {
      if (!para.trim()) continue;
      const p = el("p");
      para.split("\n").forEach((line, j) => {
        if (j) p.append(el("br"));
        inline(p, line);
      });
      box.append(p);
    }
  });
  return box;
}

function newId() {
  return Date.now().toString(36) + Math.random().toString(36).slice(2, 10);
}

function verbOf(actionId) {
  return String(actionId).split(":")[1] || "";
}

function toast(text, kind) {
  if (!text) return;
  const now = Date.now();
  if (now - (state.toastSeen.get(text) || 0) < 3000) return;
  state.toastSeen.set(text, now);
  const t = el("div", "toast " + (kind || ""), text);
  $("toasts").append(t);
  setTimeout(() => t.remove(), 6000);
}

async function api(path, body, method) {
  const init = body === undefined ? (method ? { method } : {}) : {
    method: method || "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  };
  let data;
  try {
    const r = await fetch(path, init);
    try { data = await r.json(); } catch (_) { data = { ok: false, error: `HTTP ${r.status}` }; }
    data.httpStatus = r.status;
  } catch (err) {
    data = { ok: false, error: "The server is not reachable; try again in a moment." };
  }
  return data;
}

function said(result) {
  // Show what the hub answered (a refusal also arrives as a notice; the toast shows it once).
  if (result.ok || result.duplicate) toast(result.message, result.ok ? "ok" : "");
  else toast(result.error || result.message, "bad");
}

// ---- the connection ---------------------------------------------------------------------------
function connect() {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(`${proto}//${location.host}/ws`);
  state.ws = ws;
  ws.onopen = () => {
    state.backoff = 500;
    $("conn").hidden = true;
    document.body.dataset.connected = "yes";
    if (state.selected) watch();
  };
  ws.onmessage = (e) => {
    let frame;
    try { frame = JSON.parse(e.data); } catch (_) { return; }
    onFrame(frame);
  };
  ws.onclose = () => {
    document.body.dataset.connected = "no";
    $("conn").hidden = false;
    if (state.ws === ws) state.ws = null;
    setTimeout(connect, state.backoff);
    state.backoff = Math.min(state.backoff * 2, 5000);
  };
}

function watch() {
  if (state.ws && state.ws.readyState === WebSocket.OPEN && state.selected) {
    state.ws.send(JSON.stringify({ op: "watch", run: state.selected, after: state.lastSeq,
                                   events_after: state.eventsLast }));
  }
}

function onFrame(f) {
  if (f.type === "hello") {
    $("demo-banner").hidden = !f.demo;
  } else if (f.type === "runs") {
    state.runs = new Map(f.runs.map((r) => [r.id, r]));
    renderRuns();
    renderHead();
  } else if (f.type === "thread" && f.run === state.selected) {
    applyThread(f);
  } else if (f.type === "activity" && f.run === state.selected) {
    applyActivity(f);
  } else if (f.type === "notice" && f.run === state.selected) {
    toast(f.text, "bad");
  } else if (f.type === "error") {
    toast(f.error, "bad");
  }
}

// ---- runs list --------------------------------------------------------------------------------
function renderRuns() {
  const ul = $("runs");
  ul.replaceChildren();
  for (const r of state.runs.values()) {
    const li = el("li", "run-item" + (r.id === state.selected ? " selected" : ""));
    li.dataset.run = r.id;
    const b = el("button", "run-button");
    b.type = "button";
    b.append(el("span", "run-name", r.task.length > 90 ? r.task.slice(0, 89) + "…" : r.task));
    const meta = el("span", "run-meta");
    meta.append(el("span", "badge " + r.status, r.status), el("span", "rid", r.id));
    if (r.round > 1) meta.append(el("span", "from", "round " + r.round));
    if (r.platform !== "web") meta.append(el("span", "from", "from " + r.platform));  // shown here too
    if (r.worker) meta.append(el("span", "from", "on " + r.worker));  // scale-out: the worker holding it
    b.append(meta);
    b.addEventListener("click", () => select(r.id));
    li.append(b);
    ul.append(li);
  }
}

function select(runId) {
  if (location.hash !== "#run=" + runId) history.replaceState(null, "", "#run=" + runId);
  document.body.classList.remove("runs-open");
  if (state.selected === runId) return;
  state.selected = runId;
  state.messages.clear();
  state.nodes.clear();
  state.lastSeq = 0;
  state.eventsLast = 0;
  state.activity = [];
  state.activityDropped = false;
  state.status = null;
  state.plan = null;
  state.asks.clear();
  $("thread").replaceChildren();
  $("status").replaceChildren();
  $("empty").hidden = true;
  $("run").hidden = false;
  renderRuns();
  renderHead();
  watch();
}

function renderHead() {
  const r = state.runs.get(state.selected);
  $("run-task").textContent = r ? r.task : "";
  const round = r && r.round > 1 ? ` · round ${r.round}` : "";
  $("run-id").textContent = r ? `${r.id} · ${r.status}${round}${r.worker ? " · worker " + r.worker : ""}`
    : state.selected || "";
  // An ended run is not closed: what is typed into its box starts its next round (POST …/continue).
  const ended = isEnded(r);
  $("ask-oracle").disabled = Boolean(ended);
  $("send").textContent = ended ? "Continue" : "Send";
  $("send").title = ended ? "The agent takes the conversation up again, in the same session: a next round"
    : "To the agent's inbox: it reads it at its next checkpoint";
  $("say").placeholder = ended ? "Continue the run…" :
    "Message the agent (its inbox) · ?question asks the oracle · q1: answers question q1";
}

function isEnded(r) {
  return Boolean(r && FINAL.has(r.status) && !r.live);
}

// ---- the thread -------------------------------------------------------------------------------
function applyThread(f) {
  if (typeof f.now === "number") state.skew = f.now - Date.now() / 1000;
  if (f.reset) {
    state.messages.clear();
    state.nodes.clear();
    $("thread").replaceChildren();
    state.status = null;
    state.plan = null;
    state.lastSeq = 0;
  }
  for (const m of f.messages) {
    const old = state.messages.get(m.id);
    if (old && old.seq >= m.seq) continue;  // already applied (a replay): nothing twice
    state.messages.set(m.id, m);
    state.lastSeq = Math.max(state.lastSeq, m.seq);
    if (m.kind === "status") {
      state.status = m;
      renderStatus();
    } else if (m.plan) {  // the agent's plan: a checklist beside the status card, updated in place
      state.plan = m;
      renderStatus();
    } else {
      place(m, renderMessage(m));
    }
  }
  document.body.dataset.lastSeq = String(state.lastSeq);
}

function place(m, node) {
  const thread = $("thread");
  const old = state.nodes.get(m.id);
  state.nodes.set(m.id, node);
  if (old) { old.replaceWith(node); return; }
  const stick = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
  let before = null;  // keep post order: the first shown message posted after this one
  for (let n = thread.lastElementChild; n; n = n.previousElementSibling) {
    if (Number(n.dataset.pos) > m.pos) before = n; else break;
  }
  thread.insertBefore(node, before);
  if (stick) node.scrollIntoView({ block: "end" });
}

function renderMessage(m) {
  // A "live" message is the agent's words as they are written (open), then its complete text (done).
  const li = el("li", `msg ${m.kind}` + (m.tone ? ` tone-${m.tone}` : "") + (m.live ? ` live-${m.live}` : ""));
  li.dataset.key = m.key;
  li.dataset.pos = String(m.pos);
  li.dataset.id = m.id;
  if (m.kind === "receipt") {
    li.dataset.state = m.text.startsWith("📬") ? "delivered" : "queued";
    li.append(renderText(m.text));
    return li;
  }
  if (m.kind === "ask") li.dataset.state = m.buttons.length ? "open" : "settled";
  if (m.kind === "ask" && m.buttons.length) {
    const ask = state.asks.get(cardOf(m));
    if (ask && ask.kind === "plan") return planCard(li, m, ask);
    if (!ask) learnAsk(cardOf(m), 0);  // drawn as any card until the API says what kind it is
  }
  if (m.title) li.append(el("div", "title", m.title));
  if (m.text) li.append(renderText(m.text));
  if (m.tasks && m.tasks.length) li.append(renderTasks(m.tasks, "tasks"));  // a turn's tool calls, as they go
  if (m.fields && m.fields.length) li.append(renderFields(m.fields));
  if (m.kind === "ask" && m.buttons.length) li.append(askButtons(m, li));
  else if (m.kind === "summary" && m.buttons.length) li.append(summaryButtons(m));
  if (m.file && typeof m.file.url === "string" && m.file.url.startsWith("/api/")) {
    const a = el("a", "file-link", `⬇ Download ${m.file.name}`);  // the agent shared it
    a.href = m.file.url;
    a.download = m.file.name;
    li.append(a);
  }
  return li;
}

function renderFields(fields) {
  const dl = el("dl", "fields");
  for (const [k, v] of fields) dl.append(el("dt", "", k), el("dd", "", v));
  return dl;
}

function summaryButtons(m) {
  // The summary's buttons (Files: the run's changed files, posted into the thread as download links).
  const row = el("div", "buttons");
  for (const b of m.buttons) {
    const btn = el("button", "", b.label);
    btn.type = "button";
    btn.dataset.verb = verbOf(b.action_id);
    btn.addEventListener("click", () => press(b.action_id, null, row, null));
    row.append(btn);
  }
  return row;
}

function askButtons(m, li) {
  const row = el("div", "buttons");
  const form = el("form", "inline-form");
  form.hidden = true;
  for (const b of m.buttons) {
    const verb = verbOf(b.action_id);
    const btn = el("button", b.style === "primary" ? "primary" : b.style === "danger" ? "danger" : "", b.label);
    btn.type = "button";
    btn.dataset.verb = verb;
    btn.addEventListener("click", () => {
      if (verb === "dec") openForm(form, b.action_id, "Why not? (optional — the agent is told)", "Decline", true);
      else press(b.action_id, null, row, form);  // an option, or "answer in words" (the server asks for them)
    });
    row.append(btn);
  }
  const box = el("div", "ask-actions");
  box.append(row, form);
  return box;
}

function openForm(form, actionId, prompt, label, emptyOk) {
  form.replaceChildren();
  const area = el("textarea");
  area.rows = 2;
  area.placeholder = prompt;
  area.setAttribute("aria-label", prompt);
  const go = el("button", "primary", label);
  go.type = "submit";
  form.append(area, go);
  form.hidden = false;
  form.onsubmit = (e) => {
    e.preventDefault();
    if (!emptyOk && !area.value.trim()) { area.focus(); return; }
    press(actionId, area.value, null, form);
  };
  area.focus();
}

async function press(actionId, text, row, form) {
  const buttons = (row || form).querySelectorAll("button");
  buttons.forEach((b) => { b.disabled = true; });
  const body = { action_id: actionId, delivery_id: newId() };  // the server dedupes on it
  if (text !== null) body.text = text;
  const result = await api("/api/action", body);
  buttons.forEach((b) => { b.disabled = false; });
  if (result.needs_input) {
    openForm(form, actionId, result.needs_input, "Send", false);
    return;
  }
  said(result);
}

// ---- plan cards: a plan-first run's plan, decided with POST …/plan ---------------------------------
// A thread message does not say what kind of card it is; GET …/asks does. A card is drawn like any card (its
// buttons work through /api/action) until the page has learned it is a plan card, then drawn again as one.
const PLAN_DECISIONS = [["go", "Approve and go", "primary"], ["go_ask", "Approve, ask before edits", ""],
                        ["revise", "Keep planning…", ""]];
const ASK_RETRIES = 3;  // a card's message can reach the page a moment before the API lists it

function cardOf(m) {
  return m.key.startsWith("ask:") ? m.key.slice(4) : "";
}

async function learnAsk(cardId, tries) {
  const run = state.selected;
  if (!cardId || !run || state.asking.has(cardId)) return;
  state.asking.add(cardId);
  const list = await api(`/api/runs/${run}/asks`);
  state.asking.delete(cardId);
  if (run !== state.selected || !Array.isArray(list)) return;
  for (const a of list) state.asks.set(a.id, a);
  const m = [...state.messages.values()].find((x) => x.key === "ask:" + cardId);
  if (!m || !m.buttons.length) return;  // settled meanwhile: it is drawn as it now is
  if (state.asks.has(cardId)) place(m, renderMessage(m));
  else if (tries < ASK_RETRIES) setTimeout(() => learnAsk(cardId, tries + 1), 300 * (tries + 1));
}

function planCard(li, m, ask) {
  const run = state.selected, cardId = ask.id;
  li.classList.add("plan-card");
  if (m.title) li.append(el("div", "title", m.title));
  const plan = typeof ask.plan === "string" && ask.plan.trim() ? ask.plan : m.text;
  li.append(el("div", "plan-text", plan));  // as text: the CSS keeps its line breaks, nothing is markup
  if (typeof ask.plan_chars === "number" && ask.plan_chars > plan.length) {
    li.append(el("div", "dim", `Shown: the first ${plan.length} of ${ask.plan_chars} characters.`));
  }
  const row = el("div", "buttons");
  const form = el("form", "inline-form");
  form.hidden = true;
  PLAN_DECISIONS.forEach(([decision, label, cls], i) => {
    const b = el("button", cls, (ask.options && ask.options[i]) || label);
    b.type = "button";
    b.dataset.decision = decision;
    b.addEventListener("click", () => {
      if (decision === "revise") openPlanForm(form, row, run, cardId);
      else decide(run, cardId, decision, "", row, form);
    });
    row.append(b);
  });
  const box = el("div", "ask-actions");
  box.append(row, form);
  li.append(box);
  return li;
}

function openPlanForm(form, row, run, cardId) {
  form.replaceChildren();
  const area = el("textarea");
  area.rows = 3;
  area.placeholder = "What should the agent plan differently? It reads your words, then presents a new plan.";
  area.setAttribute("aria-label", "What to plan differently");
  const go = el("button", "primary", "Keep planning");
  go.type = "submit";
  form.append(area, go);
  form.hidden = false;
  form.onsubmit = (e) => {
    e.preventDefault();
    decide(run, cardId, "revise", area.value.trim(), row, form);
  };
  area.focus();
}

async function decide(run, cardId, decision, text, row, form) {
  const buttons = [...row.querySelectorAll("button"), ...form.querySelectorAll("button")];
  buttons.forEach((b) => { b.disabled = true; });
  const body = { ask_id: cardId, decision };
  if (text) body.text = text;
  const result = await api(`/api/runs/${run}/plan`, body);
  buttons.forEach((b) => { b.disabled = false; });
  said(result);  // decided: the server edits the card into its outcome, like any card
}

// ---- the status card --------------------------------------------------------------------------
function renderStatus() {
  const m = state.status;
  const box = $("status");
  box.replaceChildren();
  if (!m) return;
  const fields = new Map(m.fields);
  box.dataset.state = (fields.get("State") || "").toLowerCase();
  box.className = "status-card" + (m.tone ? ` tone-${m.tone}` : "");
  const top = el("div", "status-top");
  top.append(el("div", "title", m.title));
  if (m.buttons.length) {  // a live run: one Stop button, with the choice and the warning behind it
    const stop = el("button", "danger", "Stop…");
    stop.type = "button";
    stop.id = "stop";
    stop.addEventListener("click", openStop);
    top.append(stop);
  }
  box.append(top);
  const grid = el("div", "status-grid");
  for (const name of ["Step", "Context", "Cost", "Elapsed"]) {
    const cell = el("div", "cell");
    cell.dataset.name = name;
    cell.append(el("span", "label", name), el("span", "value", fields.get(name) || "—"));
    if (name === "Context") {
      const pct = /\((\d+)%\)/.exec(fields.get(name) || "");
      const bar = el("div", "bar");
      const fill = el("div", "fill");
      const level = pct ? Math.min(100, Number(pct[1])) : 0;
      fill.style.width = level + "%";
      if (level >= 80) fill.classList.add("hot");
      bar.append(fill);
      cell.append(bar);
    }
    grid.append(cell);
  }
  box.append(grid);
  if (fields.get("Model") || m.buttons.length) box.append(renderModel(fields.get("Model") || "", m.buttons.length > 0));
  tickElapsed();
  const lines = m.text.split("\n").filter((l) => !l.startsWith("Task: "));
  if (lines.length) box.append(renderText(lines.join("\n")));
  box.append(renderActivity());
  if (state.plan && state.plan.tasks) {
    const plan = el("div", "plan");
    plan.append(el("div", "label", state.plan.title || "Plan"), renderTasks(state.plan.tasks, "checklist"));
    box.append(plan);
  }
}

const TASK_MARKS = { pending: "○", in_progress: "◐", complete: "✓", error: "✗" };

function renderTasks(tasks, cls) {
  const ul = el("ul", cls);
  for (const t of tasks) {
    const li = el("li", `task ${t.status}`, `${TASK_MARKS[t.status] || "•"} ${t.title}`);
    if (t.output) li.append(el("span", "output", ` — ${t.output}`));
    ul.append(li);
  }
  return ul;
}

// The run's model and effort (the status card's "Model" field); a live run's can be changed from its next turn.
function renderModel(text, live) {
  const row = el("div", "model-row");
  row.append(el("span", "label", "Model"), el("span", "value", text || "default"));
  if (!live) return row;
  const form = el("form", "model-form");
  const name = el("input");
  name.id = "model-name";
  name.placeholder = "model";
  name.maxLength = 100;
  const level = el("select");
  level.id = "model-effort";
  for (const v of ["", "low", "medium", "high", "xhigh", "max"]) {
    const o = el("option", "", v || "effort");
    o.value = v;
    level.append(o);
  }
  const go = el("button", "", "Change");
  go.type = "submit";
  form.append(name, level, go);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = {};
    if (name.value.trim()) body.model = name.value.trim();
    if (level.value) body.effort = level.value;
    if (!body.model && !body.effort) return;
    said(await api(`/api/runs/${state.selected}/model`, body));
  });
  row.append(form);
  return row;
}

// Elapsed, between the card's edits: the server edits the card at milestones only, so a run waiting for
// minutes would read what it read at its last one. While the card is live (it has a Stop button) the page
// counts on from the card's value at the time that version was stored (`at`, on the server's clock).
function secondsOf(text) {
  let s = 0;
  for (const [, n, unit] of String(text).matchAll(/(\d+)([hms])/g)) s += Number(n) * { h: 3600, m: 60, s: 1 }[unit];
  return /\d/.test(String(text)) ? s : null;
}

function durationText(seconds) {  // adapters/view/fmt.py duration(): 4s, 2m 05s, 2h 02m
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), pad = (n) => String(n).padStart(2, "0");
  if (h) return `${h}h ${pad(m)}m`;
  if (m) return `${m}m ${pad(s % 60)}s`;
  return `${s}s`;
}

function tickElapsed() {
  const m = state.status;
  const value = document.querySelector('#status .cell[data-name="Elapsed"] .value');
  if (!m || !value || typeof m.at !== "number") return;
  const live = m.buttons.some((b) => verbOf(b.action_id) === "stop");
  const base = secondsOf(new Map(m.fields).get("Elapsed") || "");
  if (!live || base === null) return;
  const shown = durationText(base + Math.max(0, Date.now() / 1000 + state.skew - m.at));
  if (value.textContent !== shown) value.textContent = shown;
}

function applyActivity(f) {
  const known = new Set(state.activity.map((a) => a.seq));
  for (const item of f.items) if (!known.has(item.seq)) state.activity.push(item);
  if (state.activity.length > 1000) state.activity.splice(0, state.activity.length - 1000);
  state.eventsLast = Math.max(state.eventsLast, f.last || 0);
  if (f.dropped) state.activityDropped = true;
  const old = document.querySelector("#status .activity");
  if (old) old.replaceWith(renderActivity(old.open));
}

function renderActivity(open) {
  const d = el("details", "activity");
  d.open = Boolean(open);
  const n = state.activity.length;
  const last = state.activity[n - 1];
  d.append(el("summary", "", n ? `Tool activity · ${n} call${n === 1 ? "" : "s"} · last: ${last.tool} ${last.text}`
    : "Tool activity · none yet"));
  const ol = el("ol", "tools");
  if (state.activityDropped) ol.append(el("li", "dim", "(older activity is no longer kept)"));
  for (const a of state.activity) ol.append(el("li", a.sub ? "sub" : "", `${a.sub ? "↳ " : ""}${a.tool} ${a.text}`));
  d.append(ol);
  return d;
}

// ---- stop, composer, new run --------------------------------------------------------------------
function openStop() {
  $("interrupt-text").value = "";
  $("stop-dialog").showModal();
}

async function onStopClosed() {
  const choice = $("stop-dialog").returnValue;
  const run = state.selected;
  if (!run) return;
  if (choice === "interrupt") said(await api(`/api/runs/${run}/interrupt`, { text: $("interrupt-text").value }));
  else if (choice === "end") said(await api(`/api/runs/${run}/end`, {}));
}

// Files waiting in the message box (the paperclip, or dropped on it); Send uploads them with the words.
const staged = [];

function renderStaged() {
  const list = $("staged");
  list.replaceChildren(...staged.map((f, i) => {
    const li = el("li", "chip", `📎 ${f.name} (${Math.max(1, Math.round(f.size / 1024))} KB)`);
    const x = el("button", "chip-x", "✕");
    x.type = "button";
    x.title = `Do not attach ${f.name}`;
    x.addEventListener("click", () => { staged.splice(i, 1); renderStaged(); });
    li.append(x);
    return li;
  }));
  list.hidden = staged.length === 0;
}

function stage(files) {
  for (const f of files) staged.push(f);
  renderStaged();
}

async function upload(run, text) {
  const body = new FormData();
  for (const f of staged) body.append("file", f, f.name);
  if (text) body.append("text", text);
  let data;
  try {
    const r = await fetch(`/api/runs/${run}/files`, { method: "POST", body });
    try { data = await r.json(); } catch (_) { data = { ok: false, error: `HTTP ${r.status}` }; }
  } catch (err) {
    data = { ok: false, error: "The server is not reachable; try again in a moment." };
  }
  if (data.ok) {
    staged.length = 0;
    renderStaged();
    data.message = `Attached ${data.files.map((f) => f.path).join(", ")}.`;
  }
  return data;
}

async function onSay(oracle) {
  const box = $("say");
  const text = box.value.trim();
  if (!oracle && staged.length && state.selected) {
    const result = await upload(state.selected, text);
    if (result.ok) box.value = "";
    said(result);
    return;
  }
  if (!text || !state.selected) { box.focus(); return; }
  const run = state.selected;
  const ended = isEnded(state.runs.get(run));
  const result = oracle ? await api(`/api/runs/${run}/oracle`, { question: text.replace(/^\?\s*/, "") })
    : await api(`/api/runs/${run}/${ended ? "continue" : "say"}`, { text });
  if (result.ok) box.value = "";
  said(result);
}

async function onStart(e) {
  e.preventDefault();
  const err = $("new-run-error");
  err.textContent = "";
  const task = $("task").value.trim();
  if (!task) { err.textContent = "Say what the run should do."; $("task").focus(); return; }
  const body = { task };
  const num = (id) => ($(id).value.trim() === "" ? null : Number($(id).value));
  if (num("timeout") !== null) body.timeout_s = num("timeout");
  if (num("asks") !== null) body.max_asks = num("asks");
  if (num("budget") !== null) body.budget_usd = num("budget");
  const approve = [...document.querySelectorAll("#approve input:checked")].map((box) => box.value);
  if (approve.length) body.approve = approve;  // tools to ask about before they run (tool approvals)
  if ($("model").value.trim()) body.model = $("model").value.trim();
  if ($("effort").value) body.effort = $("effort").value;
  if ($("plan-first").checked) body.plan = true;  // the work waits for an approved plan
  $("start").disabled = true;
  const result = await api("/api/runs", body);
  $("start").disabled = false;
  if (!result.ok) { err.textContent = result.error || "The run did not start."; return; }
  $("task").value = "";
  select(result.id);
}

// ---- routines: runs that start themselves (the HTTP API's /api/routines) --------------------------
const ROUTINES_POLL_MS = 10000;  // the next firings and last runs change with time: the panel asks again

async function loadRoutines() {
  const data = await api("/api/routines");
  if (Array.isArray(data.routines)) renderRoutines(data.routines);
}

function renderRoutines(list) {
  // Drawn again only when something changed: a redraw under a person's pointer would eat their click.
  const key = JSON.stringify(list);
  if (key === state.routinesKey) return;
  state.routinesKey = key;
  $("routines-count").textContent = list.length ? `(${list.length})` : "";
  const ul = $("routines");
  ul.replaceChildren();
  for (const r of list) {
    const li = el("li", "routine" + (r.paused ? " paused" : ""));
    li.dataset.id = r.id;
    li.append(el("div", "routine-name", `⏰ ${r.name}`), el("div", "routine-when", r.schedule),
              el("div", "routine-next", r.state));
    const last = r.last && r.last[0];
    if (last) {
      const a = el("a", "routine-last", `last run ${last.run_id} (${last.state})`);
      a.href = `#run=${last.run_id}`;
      a.addEventListener("click", (e) => { e.preventDefault(); select(last.run_id); });
      li.append(a);
    }
    const row = el("div", "routine-buttons");
    const toggle = r.paused ? ["Resume", "resume", ""] : ["Pause", "pause", ""];
    for (const [label, verb, cls] of [toggle, ["Run now", "run", "primary"], ["Delete", "delete", "danger"]]) {
      const b = el("button", cls, label);
      b.type = "button";
      b.dataset.verb = verb;
      b.addEventListener("click", () => routineAct(r.id, verb, row));
      row.append(b);
    }
    li.append(row);
    ul.append(li);
  }
}

async function routineAct(id, verb, row) {
  row.querySelectorAll("button").forEach((b) => { b.disabled = true; });
  const result = verb === "delete" ? await api(`/api/routines/${id}`, undefined, "DELETE")
    : await api(`/api/routines/${id}/${verb}`, {});
  said(result);
  await loadRoutines();
  if (verb === "run" && result.ok && result.id) select(result.id);
}

async function onAddRoutine(e) {
  e.preventDefault();
  const err = $("new-routine-error");
  err.textContent = "";
  const body = { task: $("routine-task").value.trim(), schedule: $("routine-schedule").value.trim(),
                 overlap: $("routine-overlap").value, catch_up: $("routine-catch-up").checked };
  if (!body.task) { err.textContent = "Say what the routine should do."; $("routine-task").focus(); return; }
  if (!body.schedule) { err.textContent = "Say when: every weekday at 9:00, every 2 hours, at 22:00…"; return; }
  const name = $("routine-name").value.trim(), zone = $("routine-zone").value.trim();
  if (name) body.name = name;
  if (zone) body.timezone = zone;
  $("add-routine").disabled = true;
  const result = await api("/api/routines", body);
  $("add-routine").disabled = false;
  if (!result.ok) { err.textContent = result.error || "The routine was not saved."; return; }
  toast(`Routine saved; next ${result.next}`, "ok");
  $("routine-task").value = "";
  $("routine-schedule").value = "";
  $("routine-name").value = "";
  await loadRoutines();
}

function init() {
  $("new-run").addEventListener("submit", onStart);
  $("new-routine").addEventListener("submit", onAddRoutine);
  try { $("routine-zone").value = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (_) { /* none */ }
  loadRoutines();
  setInterval(loadRoutines, ROUTINES_POLL_MS);
  $("composer").addEventListener("submit", (e) => { e.preventDefault(); onSay(false); });
  $("say").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); onSay(false); }
  });
  $("ask-oracle").addEventListener("click", () => onSay(true));
  $("attach").addEventListener("click", () => $("file-input").click());
  $("file-input").addEventListener("change", (e) => { stage(e.target.files); e.target.value = ""; });
  const composer = $("composer");
  composer.addEventListener("dragover", (e) => { e.preventDefault(); composer.classList.add("dropping"); });
  composer.addEventListener("dragleave", () => composer.classList.remove("dropping"));
  composer.addEventListener("drop", (e) => {
    e.preventDefault();
    composer.classList.remove("dropping");
    if (e.dataTransfer && e.dataTransfer.files.length) stage(e.dataTransfer.files);
  });
  $("stop-dialog").addEventListener("close", onStopClosed);
  $("toggle-runs").addEventListener("click", () => document.body.classList.toggle("runs-open"));
  setInterval(tickElapsed, 1000);
  // Scrolling a card into view keeps it clear of the sticky status card and composer (style.css reads these).
  const sizes = new ResizeObserver(() => {
    const root = document.documentElement.style;
    root.setProperty("--composer-h", `${$("composer").offsetHeight}px`);
    root.setProperty("--status-h", `${$("status").offsetHeight}px`);
  });
  sizes.observe($("composer"));
  sizes.observe($("status"));
  const m = /^#run=([A-Za-z0-9_-]+)$/.exec(location.hash);
  if (m) select(m[1]);
  connect();
}

document.addEventListener("DOMContentLoaded", init);
