// The epoch table: one row per stored epoch (its EpochReport, scores, reward model), under the metric names.
import { $, el, fmtInt, fmtNum, fmtPct, isNum, metricName } from "./util.js";

const EPISODE_COLUMNS = ["episode/count", "episode/return_env_mean", "episode/return_env_median",
  "episode/return_reward_model_mean", "episode/return_reward_model_median", "episode/length_mean",
  "episode/rooms_mean", "episode/tiles_mean", "milestone/score"];

function milestoneNames(rows) {
  const names = [];
  for (const row of rows) {
    for (const name of Object.keys(row.report?.episodes?.milestones || {})) {
      if (!names.includes(name)) names.push(name); // quest order, as the report lists them
    }
  }
  return names.map((n) => `milestone/${n}`);
}

function cell(value, format = fmtNum) {
  return el("td", { class: "num" }, format(value));
}

// rows: the /api/epochs rows, oldest first; onPick(epoch) when a row is chosen.
export function drawEpochTable(rows, onPick) {
  const table = $("epochs");
  const milestones = milestoneNames(rows);
  const episodeColumns = [...EPISODE_COLUMNS, ...milestones];
  const head = el("tr", {},
    el("th", {}, "epoch"), el("th", {}, "env steps"), el("th", {}, metricName("throughput/env_steps_per_s")),
    episodeColumns.map((name) => el("th", {}, metricName(name))),
    el("th", {}, "segments scored / unjudged / announced"), el("th", {}, metricName("judge/combined")),
    el("th", {}, metricName("reward_model/accuracy")),
    el("th", {}, "reward model"));
  table.tHead.replaceChildren(head);
  const body = rows.slice().reverse().map((row) => {
    const m = row.metrics || {};
    const report = row.report;
    let episodes;
    if (!report) {
      episodes = [el("td", { colspan: episodeColumns.length, class: "muted" }, "no EpochReport stored for this epoch")];
    } else if (report.episodes.count === 0) {
      episodes = [el("td", { colspan: episodeColumns.length, class: "warn-text" }, row.episodes_summary)];
    } else {
      episodes = episodeColumns.map((name) => cell(m[name],
        name === "episode/count" ? fmtInt : name.startsWith("milestone/") ? fmtPct : fmtNum));
    }
    // Per kind and dimension on hover; the judges chart draws them over the epochs.
    const judges = Object.entries(m).filter(([k]) => k.startsWith("judge/") && k !== "judge/combined")
      .map(([k, v]) => `${k} ${fmtNum(v)}`).join("\n");
    const model = row.reward_model;
    const tr = el("tr", { class: "clickable", "data-epoch": row.epoch, title: "show this epoch's segments" },
      el("td", { class: "num" }, row.epoch),
      el("td", { class: "num" }, fmtInt(row.env_steps)),
      cell(m["throughput/env_steps_per_s"], (v) => fmtNum(v, 0)),
      episodes,
      el("td", { class: "num" }, `${row.segments_scored} / ${row.segments_unjudged} / ${fmtInt(row.segments_announced)}`),
      el("td", { class: "num", title: judges || null }, fmtNum(m["judge/combined"], 3)),
      cell(m["reward_model/accuracy"], fmtPct),
      el("td", { class: model ? (model.accepted ? "yes" : "no") : "" },
        model ? (model.accepted ? `accepted (${fmtInt(model.pairs)} pairs)` : "kept previous") : "–"));
    if (model?.reason) tr.cells[tr.cells.length - 1].title = model.reason;
    tr.addEventListener("click", () => onPick(row.epoch));
    return tr;
  });
  table.tBodies[0].replaceChildren(...body);
  $("epochs-empty").hidden = rows.length > 0;
}

// The figures of one EpisodeStats (flat names) as a compact list, or the sentence saying none finished.
export function drawEpisodeStats(box, metrics, title, noneText) {
  const count = metrics["episode/count"];
  const items = [el("h3", {}, title)];
  if (!isNum(count) || count === 0) {
    items.push(el("p", { class: "warn-text", id: "episodes-none" }, noneText));
    box.replaceChildren(...items);
    return;
  }
  const list = el("dl", { class: "figures" });
  for (const name of EPISODE_COLUMNS) {
    if (!(name in metrics)) continue;
    const format = name === "episode/count" ? fmtInt : name === "milestone/score" ? fmtPct : fmtNum;
    list.append(el("div", { "data-metric": name }, el("dt", {}, metricName(name)), el("dd", {}, format(metrics[name]))));
  }
  items.push(list);
  const milestones = Object.entries(metrics).filter(([k]) => k.startsWith("milestone/") && k !== "milestone/score");
  if (milestones.length) {
    items.push(el("div", { class: "bars" }, milestones.map(([name, fraction]) => el("div", { class: "bar", "data-metric": name },
      el("span", { class: "bar-label" }, metricName(name)),
      el("span", { class: "bar-track" }, el("i", { style: `width:${Math.round(fraction * 100)}%` })),
      el("span", { class: "bar-value num" }, fmtPct(fraction))))));
  }
  box.replaceChildren(...items);
}
