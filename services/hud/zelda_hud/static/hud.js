// The HUD page: one websocket (protocol in zelda_hud/wire.py), reconnecting by itself, plus a few REST calls.
"use strict";

(() => {
  const MAX_ROWS = 50;
  const RECONNECT_DELAYS_S = [0.5, 1, 2, 4, 5];
  const STALE_AFTER_MS = 7000; // the server sends a heartbeat every ~2 s
  const COLORS = ["#4cc9f0", "#f2b84b", "#c77dff", "#5fd38d", "#ef6461", "#90be6d", "#f9844a", "#577590"];

  // The token arrives once in the address (?token=...); keep it for this tab only and take it out of the
  // address bar, so it does not end up in bookmarks, screenshots or shared links.
  const token = (() => {
    const params = new URLSearchParams(location.search);
    const fromUrl = params.get("token");
    try {
      if (fromUrl) {
        sessionStorage.setItem("zelda-hud-token", fromUrl);
        params.delete("token");
        const query = params.toString();
        history.replaceState(null, "", location.pathname + (query ? `?${query}` : "") + location.hash);
      }
      return fromUrl || sessionStorage.getItem("zelda-hud-token");
    } catch (e) { // storage disabled: the token still works for this page view
      return fromUrl;
    }
  })();
  const $ = (id) => document.getElementById(id);

  const state = {
    runId: null,
    envs: [],
    selectedEnv: null,
    history: [],
    componentKeys: [],
    exploration: { groups: {}, positions: {} },
    pipeline: { epochs: [] },
    storedEpochs: {},
    frameTimes: [],
  };
  const charts = { ret: null, comp: null };
  window.hud = { state, charts }; // for debugging in the console and for the browser tests

  // ---------- formatting helpers ----------

  const fmtInt = (v) => (v === null || v === undefined ? "–" : Math.round(v).toLocaleString("en-US"));
  const fmtNum = (v, digits = 2) => (v === null || v === undefined ? "–" : Number(v).toFixed(digits));
  const fmtPct = (v) => (v === null || v === undefined ? "–" : `${(v * 100).toFixed(1)}%`);
  const hex = (n) => `0x${Number(n).toString(16).padStart(2, "0")}`;
  const setText = (id, text) => { const el = $(id); if (el.textContent !== String(text)) el.textContent = text; };

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === "class") node.className = v;
      else if (k === "title") node.title = v;
      else node.setAttribute(k, v);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

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
      refreshEpochs();
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

  async function api(path) {
    const headers = token ? { Authorization: `Bearer ${token}` } : {};
    const response = await fetch(new URL(path, location.href), { headers });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${(await response.text()).slice(0, 200)}`);
    return response.json();
  }

  // ---------- messages ----------

  const handlers = {
    snapshot(data) {
      state.runId = data.run_id;
      setText("run-id", data.run_id || "waiting for a run…");
      $("run-pinned").hidden = !data.pinned;
      handlers.server(data.server);
      state.history = data.history || [];
      // A snapshot may belong to another run (or a restarted server): start the charts afresh.
      for (const name of Object.keys(charts)) { charts[name]?.destroy(); charts[name] = null; }
      state.componentKeys = [];
      if (data.metrics) showMetrics(data.metrics); else clearMetrics();
      redrawCharts();
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
      setText("nats-state", info.nats);
      $("nats-state").className = info.nats === "connected" ? "yes" : "no";
    },

    frame(frame) {
      if (state.selectedEnv && frame.env_id !== state.selectedEnv) return;
      const img = $("frame");
      img.src = `data:image/png;base64,${frame.png}`;
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

    metrics(m) {
      showMetrics(m);
      state.history.push({
        t: Date.parse(m.emitted_at) / 1000,
        epoch: m.epoch,
        env_steps: m.env_steps,
        env_steps_per_s: m.env_steps_per_s,
        mean_episode_return: m.mean_episode_return,
        reward_components: m.reward_components,
      });
      if (state.history.length > 2000) state.history.shift();
      redrawCharts();
    },

    exploration(x) {
      state.exploration = x;
      setText("rooms-discovered", fmtInt(x.rooms_discovered));
      setText("tiles-visited", fmtInt(x.tiles_visited));
      drawHeatmaps();
    },

    pipeline(p) {
      state.pipeline = p;
      setText("count-exported", fmtInt(p.segments_exported));
      setText("count-scored", fmtInt(p.scored));
      setText("count-pending", fmtInt(p.pending));
      setText("count-unjudged", fmtInt(p.unjudged));
      setText("count-dead", fmtInt(p.dead_letters));
      drawEpochs();
    },

    verdict(v) {
      const scores = Object.entries(v.scores).map(([k, s]) => el("span", { class: "chip" }, `${k} ${fmtNum(s)}`));
      const agreement = el("td", { class: "num" },
        el("span", { class: "agree" }, el("i", { style: `width:${Math.round(v.agreement * 100)}%` })),
        fmtNum(v.agreement));
      const row = el("tr", {},
        el("td", { title: `epoch ${v.epoch}` }, v.segment_id),
        el("td", { class: `kind kind-${v.kind}` }, v.kind),
        el("td", {}, ...scores),
        agreement,
        el("td", { class: "num" }, v.votes),
        el("td", { title: v.backend }, v.model),
        el("td", { class: "rationale" }, v.rationale));
      prependRow($("verdicts").tBodies[0], row, `${v.segment_id}/${v.kind}`);
    },

    scored(s) {
      const dims = Object.entries(s.dimensions).map(([k, d]) => el("span", { class: "chip" }, `${k} ${fmtNum(d)}`));
      const row = el("tr", {},
        el("td", {}, s.segment_id), el("td", { class: "num" }, s.epoch),
        el("td", { class: "num" }, el("strong", {}, fmtNum(s.combined, 3))), el("td", {}, ...dims));
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
      if (e.event === "scores_ready") refreshEpochs();
    },
  };

  // ---------- panels ----------

  function showMetrics(m) {
    setText("stat-epoch", fmtInt(m.epoch));
    setText("stat-episodes", fmtInt(m.episodes));
    setText("stat-env-steps", fmtInt(m.env_steps));
    setText("stat-steps-per-s", fmtNum(m.env_steps_per_s, 1));
    setText("stat-mean-return", fmtNum(m.mean_episode_return));
    // Which reward model the envs shape with (newer trainers report it; older ones leave it out).
    if ("reward_model_epoch" in m) {
      setText("stat-shaping", m.reward_model_epoch === null ? "no model" : `RM epoch ${m.reward_model_epoch}`);
    }
  }

  function clearMetrics() {
    for (const id of ["stat-epoch", "stat-episodes", "stat-env-steps", "stat-steps-per-s", "stat-mean-return",
      "stat-shaping"]) {
      setText(id, "–");
    }
  }

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

  // ---------- charts (uPlot) ----------

  function chartOptions(width, series) {
    const axis = { stroke: "#8a97aa", grid: { stroke: "#243045", width: 1 }, ticks: { stroke: "#243045" } };
    return {
      width, height: 190,
      scales: { x: { time: true } },
      legend: { live: false },
      series: [{}, ...series],
      axes: [axis, { ...axis, size: 56 }],
    };
  }

  function redrawCharts() {
    const xs = state.history.map((p) => p.t);
    const keys = new Set(state.componentKeys);
    for (const p of state.history) for (const k of Object.keys(p.reward_components || {})) keys.add(k);
    const componentKeys = Array.from(keys).sort();

    const retBox = $("chart-return");
    const width = Math.max(retBox.clientWidth, 300);
    const retData = [xs, state.history.map((p) => p.mean_episode_return)];
    if (!charts.ret) {
      charts.ret = new uPlot(chartOptions(width, [
        { label: "mean return", stroke: COLORS[0], width: 2, fill: "rgba(76,201,240,0.08)", spanGaps: true },
      ]), retData, retBox);
    } else {
      charts.ret.setData(retData);
    }

    const compBox = $("chart-components");
    const compData = [xs, ...componentKeys.map((k) => state.history.map((p) => (p.reward_components || {})[k] ?? null))];
    if (!charts.comp || componentKeys.join() !== state.componentKeys.join()) {
      // uPlot's series are fixed at creation: a new component means a new chart.
      charts.comp?.destroy();
      compBox.replaceChildren();
      charts.comp = new uPlot(chartOptions(width, componentKeys.map((k, i) => (
        { label: k, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: true }))), compData, compBox);
      state.componentKeys = componentKeys;
    } else {
      charts.comp.setData(compData);
    }
  }

  window.addEventListener("resize", () => {
    const width = Math.max($("chart-return").clientWidth, 300);
    charts.ret?.setSize({ width, height: 190 });
    charts.comp?.setSize({ width, height: 190 });
  });

  // ---------- exploration heat maps ----------

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

  // ---------- epochs ----------

  let epochsInFlight = false;
  async function refreshEpochs() {
    if (epochsInFlight || !state.runId) return;
    epochsInFlight = true;
    try {
      const data = await api(`api/epochs?run_id=${encodeURIComponent(state.runId)}`);
      state.storedEpochs = Object.fromEntries(data.epochs.map((e) => [e.epoch, e]));
      drawEpochs();
    } catch (e) {
      setText("epoch-detail", `epochs unavailable: ${e.message}`);
    } finally {
      epochsInFlight = false;
    }
  }
  $("epochs-refresh").addEventListener("click", refreshEpochs);
  setInterval(refreshEpochs, 30000);

  function drawEpochs() {
    const live = Object.fromEntries((state.pipeline.epochs || []).map((e) => [e.epoch, e]));
    const numbers = new Set([...Object.keys(live), ...Object.keys(state.storedEpochs)].map(Number));
    const rows = Array.from(numbers).sort((a, b) => b - a).map((n) => {
      const l = live[n] || {};
      const s = state.storedEpochs[n] || {};
      const row = el("tr", { class: s.scores ? "clickable" : "", "data-epoch": n },
        el("td", { class: "num" }, n),
        el("td", { class: "num" }, fmtInt(l.announced ?? l.segments_exported ?? s.segments_announced)),
        el("td", { class: "num" }, fmtInt(l.scored ?? s.segments_scored)),
        el("td", { class: "num" }, fmtInt(l.unjudged ?? s.segments_unjudged)),
        el("td", { class: "num" }, fmtInt(l.pending)),
        el("td", { class: s.scores ? "yes" : "" }, s.scores ? "scores.jsonl" : "–"));
      if (s.scores) row.addEventListener("click", () => showEpoch(n));
      return row;
    });
    $("epochs").tBodies[0].replaceChildren(...rows);
  }

  async function showEpoch(n) {
    try {
      const d = await api(`api/epochs/${n}/scores?run_id=${encodeURIComponent(state.runId)}`);
      const dims = Object.entries(d.dimension_means).map(([k, v]) => `${k} ${fmtNum(v)}`).join(" · ");
      setText("epoch-detail", `epoch ${n}: ${d.count} segments, mean combined ${fmtNum(d.mean_combined, 3)}`
        + (dims ? ` (${dims})` : "") + (d.invalid_rows.length ? `; ${d.invalid_rows.length} unreadable rows` : ""));
    } catch (e) {
      setText("epoch-detail", e.message);
    }
  }

  connect();
})();
