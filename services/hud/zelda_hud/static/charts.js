// The training charts (uPlot, served locally). Every chart runs against env steps. Its rows are the stored
// epochs (EpochReport and the epoch's judge scores, one point each, drawn as dots) merged with the live points
// (one per training iteration: the epoch so far), so a page opened late still shows the whole run. Series are
// named exactly as the metrics are everywhere else (EpisodeStats.flat, EpochReport.flat).
import { $, fmtSteps, isNum } from "./util.js";

// Distinct on the dark background and from each other, the most distinct first; a chart with more series than
// colours repeats them dashed. White is kept for a chart's summary series (`last`, e.g. milestone/score).
const PALETTE = ["#4cc9f0", "#f2b84b", "#b388ff", "#5fd38d", "#ef6461", "#3a86ff", "#c5e063", "#ff5fb8",
  "#f9844a", "#2ec4b6", "#b08968", "#9aa5b1"];
const SUMMARY_COLOR = "#ffffff";
const HEIGHT = 210;

// Each chart: its metric series (fixed names, or a pattern for a set known only from the data), which are
// on the right-hand axis, and the axis titles. `empty` says what is missing when it has no point yet.
const CHARTS = [
  {
    box: "chart-return", left: "env return per episode", right: "reward-model return per episode",
    series: ["episode/return_env_mean", "episode/return_env_median", "episode/return_reward_model_mean",
      "episode/return_reward_model_median"],
    onRight: (name) => name.startsWith("episode/return_reward_model"),
    empty: "no episode finished yet",
  },
  {
    box: "chart-milestones", left: "fraction of episodes", range: [0, 1],
    pattern: /^milestone\//, last: "milestone/score",
    empty: "no episode finished yet",
  },
  {
    box: "chart-exploration", left: "rooms per episode", right: "tiles per episode",
    series: ["episode/rooms_mean", "episode/tiles_mean"], onRight: (name) => name === "episode/tiles_mean",
    empty: "no episode finished yet",
  },
  {
    box: "chart-length", left: "env steps per episode", right: "env steps/s",
    series: ["episode/length_mean", "throughput/env_steps_per_s"],
    onRight: (name) => name === "throughput/env_steps_per_s",
    empty: "no training iteration yet",
  },
  {
    box: "chart-judges", left: "mean score / accuracy", range: [0, 1],
    pattern: /^(judge\/|reward_model\/accuracy$)/, // reward_model/pairs is a count: in the epoch table
    empty: "no judged epoch yet",
  },
  {
    box: "chart-components", left: "reward per episode", right: "reward model per episode", components: true,
    onRight: (name) => name === "shaping" || name === "preference", liveOnly: true,
    empty: "no training iteration seen live yet",
  },
];

const charts = new Map(); // box id -> { plot, names }

// rows: [{env_steps, source: "epoch"|"live", metrics: {...}, reward_components?: {...}}], any order.
export function mergeRows(epochRows, livePoints) {
  const byX = new Map();
  for (const p of livePoints) if (isNum(p.env_steps)) byX.set(p.env_steps, p);
  // An epoch's stored figures replace the live point taken at the same step (its last iteration).
  for (const r of epochRows) if (isNum(r.env_steps)) byX.set(r.env_steps, { ...byX.get(r.env_steps), ...r });
  return Array.from(byX.values()).sort((a, b) => a.env_steps - b.env_steps);
}

function valuesOf(row, def) {
  return def.components ? (row.reward_components || {}) : (row.metrics || {});
}

// In the order the metrics come (milestones in quest order), the summary series last.
function seriesNames(def, rows) {
  if (def.series) return def.series;
  const names = new Set();
  for (const row of rows) {
    for (const name of Object.keys(valuesOf(row, def))) if (!def.pattern || def.pattern.test(name)) names.add(name);
  }
  const ordered = Array.from(names);
  if (def.last && names.has(def.last)) return [...ordered.filter((n) => n !== def.last), def.last];
  return ordered;
}

function axis(extra) {
  return {
    stroke: "#a7b3c4", grid: { stroke: "#243045", width: 1 }, ticks: { stroke: "#2a3444", width: 1 },
    font: "11px system-ui, sans-serif", labelFont: "12px system-ui, sans-serif", labelSize: 18, ...extra,
  };
}

function options(def, names, width, epochIndexes) {
  const right = names.some((n) => def.onRight?.(n));
  const series = names.map((name, i) => {
    const onRight = def.onRight?.(name) ?? false;
    return {
      label: onRight ? `${name} (right axis)` : name,
      scale: onRight ? "right" : "y",
      stroke: name === def.last ? SUMMARY_COLOR : PALETTE[i % PALETTE.length],
      dash: (i >= PALETTE.length || /median/.test(name)) ? [6, 4] : undefined,
      width: name === def.last ? 2.5 : 1.75,
      spanGaps: true,
      // Dots where a stored epoch ends; the line between them is the live epoch-so-far, per iteration.
      points: { show: false, size: 6, filter: () => epochIndexes.current },
    };
  });
  const scales = { x: { time: false }, y: def.range ? { range: def.range } : {} };
  if (right) scales.right = {};
  const axes = [
    axis({ label: "env steps", values: (u, ticks) => ticks.map(fmtSteps), size: 34 }),
    axis({ label: def.left, size: 48, values: (u, ticks) => ticks.map(shortNumber) }),
  ];
  if (right) axes.push(axis({ label: def.right, scale: "right", side: 1, size: 48, grid: { show: false },
    values: (u, ticks) => ticks.map(shortNumber) }));
  return {
    width, height: HEIGHT, scales, axes, series: [{ label: "env steps", value: (u, v) => fmtSteps(v) }, ...series],
    legend: { live: false }, cursor: { drag: { x: false, y: false } },
  };
}

function shortNumber(v) {
  if (!isNum(v)) return "";
  const a = Math.abs(v);
  if (a >= 1e4) return fmtSteps(v); // 12.5k
  if (a >= 100 || v === Math.round(v)) return String(Math.round(v * 10) / 10);
  return String(+v.toFixed(2));
}

function widthOf(box) {
  return Math.max(Math.floor(box.clientWidth), 200);
}

// Redraw every chart from the rows; `live` false (a finished run) hides the live-only ones.
export function drawCharts(rows, live) {
  for (const def of CHARTS) {
    const box = $(def.box);
    const card = box.closest(".chart-card");
    card.hidden = def.liveOnly && !live;
    if (card.hidden) continue;
    const used = def.liveOnly ? rows.filter((r) => r.source !== "epoch") : rows;
    const names = seriesNames(def, used);
    const withData = used.filter((r) => names.some((n) => isNum(valuesOf(r, def)[n])));
    const note = card.querySelector(".chart-empty");
    note.textContent = def.empty;
    note.hidden = withData.length > 0;
    box.hidden = withData.length === 0;
    const existing = charts.get(def.box);
    if (!withData.length) {
      existing?.plot.destroy();
      charts.delete(def.box);
      box.replaceChildren();
      continue;
    }
    const xs = withData.map((r) => r.env_steps);
    const data = [xs, ...names.map((n) => withData.map((r) => (isNum(valuesOf(r, def)[n]) ? valuesOf(r, def)[n] : null)))];
    const epochIndexes = existing?.epochIndexes ?? { current: [] };
    epochIndexes.current = withData.flatMap((r, i) => (r.source === "epoch" ? [i] : []));
    if (existing && existing.names.join("\n") === names.join("\n")) {
      existing.plot.setData(data);
      continue;
    }
    // uPlot's series are fixed at creation: a new series (a milestone, a judge dimension) means a new chart.
    existing?.plot.destroy();
    box.replaceChildren();
    const opts = options(def, names, widthOf(box), epochIndexes);
    const plot = new uPlot(opts, data, box);
    charts.set(def.box, { plot, names, epochIndexes, colors: opts.series.slice(1).map((s) => s.stroke) });
  }
}

export function chartSeries() { // for the browser tests: what each chart draws
  return Object.fromEntries(Array.from(charts, ([box, c]) => [box, {
    names: c.names, points: c.plot.data[0].length, colors: c.colors, scales: c.plot.series.slice(1).map((s) => s.scale),
    axes: c.plot.axes.map((a) => a.label),
  }]));
}

export function destroyCharts() {
  for (const c of charts.values()) c.plot.destroy();
  charts.clear();
  for (const def of CHARTS) $(def.box).replaceChildren();
}

const resized = new ResizeObserver((entries) => {
  for (const entry of entries) {
    const chart = charts.get(entry.target.id);
    const width = widthOf(entry.target);
    if (chart && chart.plot.width !== width) chart.plot.setSize({ width, height: HEIGHT });
  }
});
for (const def of CHARTS) resized.observe($(def.box));
