// The HUD page: one websocket (protocol in zelda_hud/wire.py), reconnecting by itself, plus REST calls for
// what the run stored (epochs, segments, replays). Serving a finished run, the websocket carries no live feed
// and the live-only panels are hidden.
import { chartSeries, destroyCharts, drawCharts, mergeRows } from "./charts.js";
import { drawEpisodeStats, drawEpochTable } from "./epochs.js";
import { refreshEpoch, setEpochs, showEpoch } from "./segments.js";
import { $, api, el, fmtInt, fmtNum, fmtPct, hex, isNum, setText, token } from "./util.js";

const MAX_ROWS = 50;
const MAX_POINTS = 2000;
const RECONNECT_DELAYS_S = [0.5, 1, 2, 4, 5];
const STALE_AFTER_MS = 7000; // the server sends a heartbeat every ~2 s
const EPOCHS_EVERY_MS = 30000;

const state = {
  runId: null,
  live: true,
  envs: [],
  selectedEnv: null,
  history: [], // live points, one per training iteration
  epochRows: [], // /api/epochs rows, oldest first
  latest: null, // the newest LiveMetrics
  exploration: { groups: {}, positions: {} },
  pipeline: { epochs: [] },
  frameTimes: [],
};
window.hud = { state, chartSeries }; // for debugging in the console and for the browser tests

function prependRow(tbody, row, key) {
  if (key) {
    const old = tbody.querySelector(`tr[data-key="${CSS.escape(key)}"]`);
    if (old) old.remove();
    row.dataset.key = key;
  }
  tbody.prepend(row);
  while (tbody.rows.length > MAX_ROWS) tbody.deleteRow(-1);
}

function prependItem(list, item) {
  list.querySelector("li.empty")?.remove();
  list.prepend(item);
  while (list.children.length > MAX_ROWS) list.lastElementChild.remove();
}

// ---------- connection ----------

let ws = null;
let attempt = 0;
let lastMessageAt = 0;
let reconnectTimer = null;

function setConn(kind, text) {
  $("conn").dataset.state = kind;
  setText("conn-state", text);
}

function wsUrl() {
  const url = new URL("ws", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  url.search = "";
  if (token) url.searchParams.set("token", token);
  if (state.selectedEnv) url.searchParams.set("env", state.selectedEnv);
  return url.toString();
}

function connect() {
  clearTimeout(reconnectTimer);
  setConn(attempt ? "reconnecting" : "connecting", attempt ? `reconnecting (attempt ${attempt})…` : "connecting…");
  ws = new WebSocket(wsUrl());
  ws.onopen = () => {
    attempt = 0;
    lastMessageAt = Date.now();
    setConn("connected", "connected");
  };
  ws.onmessage = (ev) => {
    lastMessageAt = Date.now();
    let msg;
    try { msg = JSON.parse(ev.data); } catch (e) { console.warn("unreadable message", e); return; }
    const handler = handlers[msg.type];
    if (handler) handler(msg.data);
  };
  ws.onclose = (ev) => {
    ws = null;
    if (ev.code === 4401) {
      setConn("unauthorized", "access token required: open this page with ?token=…");
      return; // retrying cannot help until the user adds the token
    }
    const delay = RECONNECT_DELAYS_S[Math.min(attempt, RECONNECT_DELAYS_S.length - 1)];
    attempt += 1;
    setConn("reconnecting", `disconnected, reconnecting in ${delay}s…`);
    reconnectTimer = setTimeout(connect, delay * 1000);
  };
}

// A silently dead connection (laptop sleep, proxy) never fires onclose: notice the missing heartbeat.
setInterval(() => {
  if (ws && ws.readyState === WebSocket.OPEN && Date.now() - lastMessageAt > STALE_AFTER_MS) ws.close();
}, 1000);

function send(obj) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(obj));
}

// ---------- messages ----------

const handlers = {
  snapshot(data) {
    const newRun = data.run_id !== state.runId;
    state.runId = data.run_id;
    state.live = data.live;
    document.body.classList.toggle("finished", !data.live);
    setText("run-id", data.run_id || "waiting for a run…");
    $("run-pinned").hidden = !data.pinned || !data.live;
    handlers.server(data.server);
    state.history = data.history || [];
    state.latest = data.metrics;
    if (newRun) { state.epochRows = []; destroyCharts(); }
    showTraining();
    redraw();
    handlers.envs(data.envs);
    if (data.watching && data.watching.length === 1) selectEnv(data.watching[0], false);
    handlers.exploration(data.exploration);
    handlers.pipeline(data.pipeline);
    resetList("verdicts"); data.verdicts.forEach(handlers.verdict);
    resetList("scored"); data.scored.forEach(handlers.scored);
    resetList("rm-updates"); clearRewardModel(); data.reward_models.forEach(handlers.reward_model);
    resetFeed("guidance", "no suggestions (guidance may be off)"); data.guidance.forEach(handlers.guidance);
    resetFeed("dead-letters", "none"); data.dead_letters.forEach(handlers.dead_letter);
    if (!data.envs.length) showNoFrame();
    refreshEpochs();
  },

  server(info) {
    if (!info) return;
    if (!info.live) {
      setText("nats-state", "finished run");
      $("nats-state").className = "finished-badge";
      setText("nats-label", "");
      return;
    }
    setText("nats-label", "NATS");
    setText("nats-state", info.nats);
    $("nats-state").className = info.nats === "connected" ? "yes" : "no";
  },

  frame(frame) {
    if (state.selectedEnv && frame.env_id !== state.selectedEnv) return;
    $("frame").src = `data:image/png;base64,${frame.png}`;
    $("no-frame").hidden = true;
    setText("frame-step", fmtInt(frame.step));
    const now = performance.now();
    state.frameTimes.push(now);
    while (state.frameTimes.length && now - state.frameTimes[0] > 2000) state.frameTimes.shift();
    setText("frame-fps", (state.frameTimes.length / 2).toFixed(0));
    showGameState(frame.state || {}, frame.env_id);
  },

  envs(envs) {
    state.envs = envs || [];
    const select = $("env-select");
    const ids = state.envs.map((e) => e.env_id);
    const current = Array.from(select.options).map((o) => o.value);
    if (ids.length && ids.join("\n") !== current.join("\n")) {
      select.replaceChildren(...ids.map((id) => el("option", { value: id }, id)));
    }
    if (!state.selectedEnv && ids.length) selectEnv(ids[0], false); // the server's default is the first env
    else if (ids.length && !ids.includes(state.selectedEnv)) selectEnv(ids[0]); // e.g. a new run
    else if (state.selectedEnv) select.value = state.selectedEnv;
  },

  metrics({ metrics, point }) {
    const newEpoch = state.latest && metrics.epoch !== state.latest.epoch;
    state.latest = metrics;
    state.history.push(point);
    if (state.history.length > MAX_POINTS) state.history.shift();
    showTraining();
    redraw();
    // A new epoch began: the one before has just stored its report.
    if (newEpoch) refreshEpochs();
  },

  exploration(x) {
    state.exploration = x;
    setText("rooms-discovered", fmtInt(x.rooms_discovered));
    drawHeatmaps();
  },

  pipeline(p) {
    state.pipeline = p;
    setText("count-exported", fmtInt(p.segments_exported));
    setText("count-scored", fmtInt(p.scored));
    setText("count-pending", fmtInt(p.pending));
    setText("count-unjudged", fmtInt(p.unjudged));
    setText("count-dead", fmtInt(p.dead_letters));
  },

  verdict(v) {
    const scores = Object.entries(v.scores).map(([k, s]) => el("span", { class: "chip" }, `${k} ${fmtNum(s)}`));
    const agreement = el("td", { class: "num" },
      el("span", { class: "agree" }, el("i", { style: `width:${Math.round(v.agreement * 100)}%` })),
      fmtNum(v.agreement));
    const row = el("tr", {},
      el("td", { title: `epoch ${v.epoch}` }, el("span", { class: "seg-id" }, v.segment_id)),
      el("td", { class: `kind kind-${v.kind}` }, v.kind),
      el("td", { class: "chips" }, ...scores),
      agreement,
      el("td", { class: "num" }, v.votes),
      el("td", { title: v.backend }, v.model),
      el("td", { class: "rationale" }, v.rationale));
    prependRow($("verdicts").tBodies[0], row, `${v.segment_id}/${v.kind}`);
  },

  scored(s) {
    const dims = Object.entries(s.dimensions).map(([k, d]) => el("span", { class: "chip" }, `${k} ${fmtNum(d)}`));
    const row = el("tr", {},
      el("td", {}, el("span", { class: "seg-id" }, s.segment_id)), el("td", { class: "num" }, s.epoch),
      el("td", { class: "num" }, el("strong", {}, fmtNum(s.combined, 3))), el("td", { class: "chips" }, ...dims));
    prependRow($("scored").tBodies[0], row, s.segment_id);
  },

  reward_model(r) {
    setText("rm-model-epoch", r.model_epoch === null ? "none" : `epoch ${r.model_epoch}`);
    setText("rm-pairs", fmtInt(r.pairs));
    setText("rm-accuracy", fmtPct(r.validation_accuracy));
    const row = el("tr", {},
      el("td", { class: "num" }, r.epoch),
      el("td", { class: r.accepted ? "yes" : "no" }, r.accepted ? "yes" : "no (kept previous)"),
      el("td", { class: "num" }, fmtInt(r.pairs)),
      el("td", { class: "num" }, fmtPct(r.validation_accuracy)),
      el("td", {}, r.trained_on_epochs.join(", ") || "–"),
      el("td", { class: "rationale" }, r.reason || ""));
    prependRow($("rm-updates").tBodies[0], row, String(r.epoch));
    refreshEpochs();
  },

  guidance(g) {
    prependItem($("guidance"), el("li", {},
      el("div", { class: "meta" }, `${g.env_id} · step ${fmtInt(g.step)} · ${g.source} · ${g.backend}`),
      el("span", { class: "action" }, g.action), " ", g.reason));
  },

  dead_letter(d) {
    prependItem($("dead-letters"), el("li", {},
      el("div", { class: "meta" },
        `${d.original_subject} · ${d.consumer} · ${d.deliveries} deliveries`,
        d.segment_id ? ` · ${d.segment_id}` : ""),
      d.reason));
  },

  epoch(e) {
    refreshEpochs();
    if (e.event === "scores_ready") refreshEpoch();
  },
};

// ---------- training ----------

function redraw() {
  const epochPoints = state.epochRows.map((r) => ({ ...r, source: "epoch" }));
  drawCharts(mergeRows(epochPoints, state.history), state.live);
}

// The tiles and the episode figures: live, the epoch so far; for a finished run, its last stored epoch.
function showTraining() {
  const m = state.latest;
  const last = state.epochRows.length ? state.epochRows[state.epochRows.length - 1] : null;
  if (state.live && m) {
    const point = state.history.length ? state.history[state.history.length - 1].metrics : {};
    setText("stat-epoch", fmtInt(m.epoch));
    setText("stat-env-steps", fmtInt(m.env_steps));
    setText("stat-steps-per-s", fmtNum(m.env_steps_per_s, 1));
    setText("stat-shaping", m.reward_model_epoch === null ? "no model" : `RM epoch ${m.reward_model_epoch}`);
    drawEpisodeStats($("episode-stats"), point, `episodes of epoch ${m.epoch} so far`,
      `no episode finished yet in epoch ${m.epoch} (${fmtInt(m.env_steps)} env steps played so far); `
      + "its figures appear when the first episode ends");
    setText("stat-tiles", isNum(point["episode/tiles_mean"]) ? fmtNum(point["episode/tiles_mean"], 1)
      : "no episode finished yet");
  } else if (last && last.report) {
    const r = last.report;
    setText("stat-epoch", fmtInt(r.epoch));
    setText("stat-env-steps", fmtInt(r.env_steps));
    setText("stat-steps-per-s", fmtNum(r.env_steps_per_s, 1));
    setText("stat-shaping", r.reward_model_epoch === null ? "no model" : `RM epoch ${r.reward_model_epoch}`);
    drawEpisodeStats($("episode-stats"), last.metrics, `episodes of epoch ${r.epoch} (the last stored)`,
      last.episodes_summary);
    setText("stat-tiles", isNum(last.metrics["episode/tiles_mean"]) ? fmtNum(last.metrics["episode/tiles_mean"], 1)
      : "no episode finished");
  } else {
    for (const id of ["stat-epoch", "stat-env-steps", "stat-steps-per-s", "stat-shaping"]) setText(id, "–");
    $("episode-stats").replaceChildren(el("h3", {}, "episodes"),
      el("p", { class: "hint" }, state.live ? "waiting for the trainer's first iteration…" : "this run stored no epoch"));
    setText("stat-tiles", "–");
  }
}

// ---------- stored epochs ----------

let epochsInFlight = false;
async function refreshEpochs() {
  if (epochsInFlight || !state.runId) return;
  epochsInFlight = true;
  try {
    const data = await api(`api/epochs?run_id=${encodeURIComponent(state.runId)}`);
    if (data.run_id !== state.runId) return;
    state.epochRows = data.epochs;
    setText("epochs-error", "");
    drawEpochTable(state.epochRows, (n) => { showEpoch(n); $("segments-panel").scrollIntoView({ block: "start" }); });
    setEpochs(state.runId, [...data.epochs.map((e) => e.epoch), ...(state.latest ? [state.latest.epoch] : [])]);
    showTraining();
    redraw();
  } catch (e) {
    setText("epochs-error", `epochs unavailable: ${e.message}`);
  } finally {
    epochsInFlight = false;
  }
}
$("epochs-refresh").addEventListener("click", () => { refreshEpochs(); refreshEpoch(); });
setInterval(() => { if (state.live) { refreshEpochs(); refreshEpoch(); } }, EPOCHS_EVERY_MS);

// ---------- live panels ----------

function clearRewardModel() {
  setText("rm-model-epoch", "none"); setText("rm-pairs", "–"); setText("rm-accuracy", "–");
}

function resetList(id) { $(id).tBodies[0].replaceChildren(); }
function resetFeed(id, emptyText) { $(id).replaceChildren(el("li", { class: "empty" }, emptyText)); }

function showNoFrame() {
  $("frame").removeAttribute("src");
  $("no-frame").hidden = false;
  setText("frame-step", "–");
}

const STATE_SHOWN = new Set(["room", "group", "x", "y", "health", "max_health", "rupees", "keys",
  "text_active", "menu_open"]);

function showGameState(s, envId) {
  const has = (k) => s[k] !== undefined && s[k] !== null;
  if (has("room")) setText("gs-room", `${hex(s.room)} (row ${s.room >> 4}, col ${s.room & 15})`);
  setText("gs-group", has("group") ? (s.group === 0 ? "0 (overworld)" : s.group) : "–");
  setText("gs-pos", has("x") ? `${s.x}, ${s.y}` : "–");
  if (has("health")) {
    // Zelda counts health in quarter hearts.
    const hearts = (q) => (q / 4).toFixed(2).replace(/\.?0+$/, "");
    setText("gs-health", has("max_health") ? `${hearts(s.health)} / ${hearts(s.max_health)} ♥` : s.health);
  }
  setText("gs-rupees", has("rupees") ? s.rupees : "–");
  setText("gs-keys", has("keys") ? s.keys : "–");
  const flags = [];
  for (const [k, v] of Object.entries(s)) if (typeof v === "boolean" && v) flags.push(k.replace(/_/g, " "));
  setText("gs-flags", flags.length ? flags.join(", ") : "none");
  const rows = Object.entries(s).filter(([k]) => !STATE_SHOWN.has(k)).sort(([a], [b]) => a.localeCompare(b));
  $("gs-all").replaceChildren(...rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, String(v)))));
  if (envId && state.exploration.positions && has("group") && has("room")) {
    state.exploration.positions[envId] = [s.group, s.room];
  }
}

function selectEnv(envId, tell = true) {
  if (state.selectedEnv === envId) return;
  state.selectedEnv = envId;
  $("env-select").value = envId;
  state.frameTimes = [];
  if (tell) send({ type: "watch", env_ids: [envId] });
  drawHeatmaps();
}
$("env-select").addEventListener("change", (ev) => selectEnv(ev.target.value));

function drawHeatmaps() {
  const box = $("heatmaps");
  const groups = state.exploration.groups || {};
  const positions = state.exploration.positions || {};
  const here = new Map();
  for (const [envId, [g, r]] of Object.entries(positions)) {
    const key = `${g}/${r}`;
    here.set(key, (here.get(key) || []).concat(envId));
  }
  const nodes = [];
  // One colour scale for all groups, so a dungeon visited for a moment does not look as hot as home.
  const peak = Math.max(1, ...Object.values(groups).flatMap((rooms) => Object.values(rooms)));
  for (const group of Object.keys(groups).sort((a, b) => a - b)) {
    const rooms = groups[group];
    const ids = Object.keys(rooms).map(Number);
    // Room id = (row << 4) | col on a 16-wide grid; draw only as many rows and columns as were seen.
    const rows = Math.max(...ids.map((r) => r >> 4)) + 1;
    const cols = Math.max(...ids.map((r) => r & 15)) + 1;
    const cellWidth = cols > 8 ? 20 : 32; // the real overworld is 16 wide
    const grid = el("div", { class: "heat-grid", "data-group": group,
      style: `--cell-w: ${cellWidth}px; grid-template-columns: repeat(${cols}, var(--cell-w))` });
    for (let row = 0; row < rows; row++) {
      for (let col = 0; col < cols; col++) {
        const room = (row << 4) | col;
        const cell = el("div", { class: "heat-cell", "data-room": room });
        const count = rooms[room];
        const envsHere = here.get(`${group}/${room}`) || [];
        if (count !== undefined) {
          const level = count ? Math.log1p(count) / Math.log1p(peak) : 0;
          cell.classList.add("visited");
          cell.style.background = `hsl(${200 - 160 * level}, 85%, ${28 + 34 * level}%)`;
          cell.textContent = hex(room).slice(2);
        }
        if (envsHere.length) {
          cell.classList.add("here");
          if (envsHere.includes(state.selectedEnv)) cell.classList.add("selected");
        }
        cell.title = `group ${group}, room ${hex(room)}: ${count === undefined ? "not discovered" : `${count} frames`}`
          + (envsHere.length ? ` · now: ${envsHere.join(", ")}` : "");
        grid.append(cell);
      }
    }
    nodes.push(el("div", { class: "heat-group" },
      el("h4", {}, group === "0" ? "group 0 · overworld" : `group ${group}`), grid));
  }
  if (!nodes.length) nodes.push(el("p", { class: "hint" }, "no rooms yet"));
  box.replaceChildren(...nodes);
}

connect();
