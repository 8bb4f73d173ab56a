// The segment browser: an epoch's segments with their scores; one opens as a replay (animation, state
// timeline, milestones, and every judge's votes with their rationale).
import { $, api, apiBlobUrl, el, fmtInt, fmtNum, hex, setText } from "./util.js";

const browser = { runId: null, epoch: null, segment: null, format: "gif", mediaUrl: null, epochs: [] };

const q = () => `run_id=${encodeURIComponent(browser.runId)}`;
const segmentPath = (epoch, id) => `api/epochs/${epoch}/segments/${encodeURIComponent(id)}`;

function chips(scores) {
  const entries = Object.entries(scores || {});
  return entries.length ? entries.map(([k, v]) => el("span", { class: "chip" }, `${k} ${fmtNum(v)}`)) : "–";
}

// The epochs to choose from (numbers, any order); keeps the chosen one, else picks the newest.
export function setEpochs(runId, epochs) {
  const changedRun = runId !== browser.runId;
  browser.runId = runId;
  const sorted = Array.from(new Set(epochs)).sort((a, b) => b - a);
  const select = $("segment-epoch");
  if (sorted.join() !== browser.epochs.join() || changedRun) {
    browser.epochs = sorted;
    select.replaceChildren(...(sorted.length
      ? sorted.map((n) => el("option", { value: n }, `epoch ${n}`))
      : [el("option", { value: "" }, "no epoch stored yet")]));
  }
  if (changedRun) { browser.epoch = null; closeReplay(); }
  if (browser.epoch === null && sorted.length) showEpoch(sorted[0]);
  else if (browser.epoch !== null) select.value = browser.epoch;
}

export async function showEpoch(epoch) {
  browser.epoch = epoch;
  $("segment-epoch").value = epoch;
  setText("segments-summary", `loading epoch ${epoch}…`);
  try {
    const data = await api(`api/epochs/${epoch}/segments?${q()}`);
    if (browser.epoch !== epoch) return; // another epoch was chosen meanwhile
    drawSegments(data);
  } catch (e) {
    setText("segments-summary", e.message);
  }
}

export function refreshEpoch() {
  if (browser.epoch !== null) showEpoch(browser.epoch);
}

function drawSegments(data) {
  const dims = Object.entries(data.dimension_means).map(([k, v]) => `${k} ${fmtNum(v)}`).join(" · ");
  setText("segments-summary", `epoch ${data.epoch}: ${data.segments.length} segments, ${data.scored} scored, `
    + `${data.unjudged} unjudged${data.closed ? "" : " (judging)"}`
    + (data.mean_combined === null ? "" : `; mean combined score ${fmtNum(data.mean_combined, 3)}`)
    + (dims ? ` (${dims})` : "")
    + (data.unreadable.length ? `; ${data.unreadable.length} stored rows unreadable` : ""));
  const rows = data.segments.map((s) => {
    const tr = el("tr", { class: "clickable", "data-segment": s.segment_id, title: "open the replay" },
      el("td", {}, el("span", { class: "seg-id" }, s.segment_id)),
      el("td", { class: "num" }, `${fmtInt(s.steps[0])}–${fmtInt(s.steps[1])}`),
      el("td", { class: "num" }, fmtNum(s.total_reward)),
      el("td", { class: "num" }, s.rooms),
      el("td", { class: `status-${s.status.replace(" ", "-")}` }, s.status),
      el("td", { class: "num" }, el("strong", {}, fmtNum(s.combined, 3))),
      el("td", { class: "chips" }, chips(s.dimensions)));
    if (s.segment_id === browser.segment) tr.classList.add("selected");
    tr.addEventListener("click", () => openReplay(data.epoch, s.segment_id));
    return tr;
  });
  $("segments").tBodies[0].replaceChildren(...rows);
  $("segments-empty").hidden = rows.length > 0;
}

function closeReplay() {
  browser.segment = null;
  $("replay").hidden = true;
  if (browser.mediaUrl) URL.revokeObjectURL(browser.mediaUrl);
  browser.mediaUrl = null;
}

export async function openReplay(epoch, segmentId) {
  browser.segment = segmentId;
  for (const tr of $("segments").tBodies[0].rows) tr.classList.toggle("selected", tr.dataset.segment === segmentId);
  const panel = $("replay");
  panel.hidden = false;
  setText("replay-title", `${segmentId} (epoch ${epoch})`);
  $("replay-details").replaceChildren(el("p", { class: "hint" }, "loading the replay…"));
  loadMedia(epoch, segmentId);
  try {
    const replay = await api(`${segmentPath(epoch, segmentId)}?${q()}`);
    if (browser.segment !== segmentId) return;
    $("replay-details").replaceChildren(...replayDetails(replay));
  } catch (e) {
    $("replay-details").replaceChildren(el("p", { class: "warn-text" }, e.message));
  }
  panel.scrollIntoView({ block: "nearest" });
}

async function loadMedia(epoch, segmentId) {
  const format = browser.format;
  const img = $("replay-gif");
  const video = $("replay-mp4");
  img.hidden = true; video.hidden = true;
  setText("replay-media-state", `rendering the ${format.toUpperCase()}…`);
  $("replay-media-state").hidden = false;
  try {
    const url = await apiBlobUrl(`${segmentPath(epoch, segmentId)}/replay.${format}?${q()}`);
    if (browser.segment !== segmentId || browser.format !== format) { URL.revokeObjectURL(url); return; }
    if (browser.mediaUrl) URL.revokeObjectURL(browser.mediaUrl);
    browser.mediaUrl = url;
    const target = format === "gif" ? img : video;
    target.src = url;
    target.hidden = false;
    $("replay-media-state").hidden = true;
    $("replay-download").href = url;
    $("replay-download").download = `${segmentId}.${format}`;
  } catch (e) {
    setText("replay-media-state", e.message);
  }
}

for (const button of document.querySelectorAll("#replay-format button")) {
  button.addEventListener("click", () => {
    browser.format = button.dataset.format;
    for (const b of document.querySelectorAll("#replay-format button")) b.classList.toggle("on", b === button);
    if (browser.segment !== null) loadMedia(browser.epoch, browser.segment);
  });
}
$("segment-epoch").addEventListener("change", (ev) => { if (ev.target.value !== "") showEpoch(Number(ev.target.value)); });
$("replay-close").addEventListener("click", closeReplay);

function replayDetails(r) {
  const m = r.manifest;
  const out = [];
  out.push(el("dl", { class: "figures" },
    el("div", {}, el("dt", {}, "episode"), el("dd", {}, m.episode_id)),
    el("div", {}, el("dt", {}, "steps"), el("dd", {}, `${fmtInt(m.step_start)}–${fmtInt(m.step_end)}`)),
    el("div", {}, el("dt", {}, "total reward"), el("dd", {}, fmtNum(m.total_reward))),
    el("div", {}, el("dt", {}, "rooms"), el("dd", {}, m.rooms_visited.length)),
    el("div", {}, el("dt", {}, "shaped by"), el("dd", {}, m.reward_model_epoch === null ? "no model"
      : `RM epoch ${m.reward_model_epoch}`)),
    el("div", {}, el("dt", {}, "combined score"), el("dd", {}, r.scored ? fmtNum(r.scored.combined, 3) : "not scored"))));
  if (r.milestones.length) {
    out.push(el("h4", {}, "quest milestones"), el("ul", { class: "marks" }, r.milestones.map((mark) => el("li", {
      class: mark.first_step === null ? "muted" : "yes", title: mark.description },
    mark.name, " · ", !mark.readable ? "not readable from the state log"
      : mark.first_step === null ? "not reached in this segment"
        : mark.from_start ? "held from the start" : `reached at step ${fmtInt(mark.first_step)}`))));
  }
  out.push(el("h4", {}, "judges"));
  for (const v of r.verdicts) {
    if (!v.record) {
      out.push(el("div", { class: "verdict" }, el("span", { class: `kind kind-${v.kind}` }, v.kind), " ",
        el("span", { class: "muted" }, v.missing)));
      continue;
    }
    const verdict = v.record.verdict;
    out.push(el("div", { class: "verdict", "data-kind": v.kind },
      el("div", {}, el("span", { class: `kind kind-${v.kind}` }, v.kind), " ",
        el("span", { class: "muted" }, `${verdict.model} (${verdict.backend}) · ${verdict.votes} votes · agreement `
          + `${fmtNum(verdict.agreement)}`)),
      el("div", { class: "chips" }, chips(verdict.scores)),
      el("p", { class: "rationale" }, verdict.rationale),
      el("details", {}, el("summary", {}, `every vote (${v.record.votes.length})`),
        el("ol", { class: "votes" }, v.record.votes.map((vote) => el("li", {},
          el("div", { class: "chips" }, chips(vote.scores)), el("p", { class: "rationale" }, vote.rationale)))))));
  }
  if (r.steps.length) {
    const shown = new Set(r.timeline);
    const rows = r.steps.filter((s) => shown.has(s.step)).map((s) => el("tr", {},
      el("td", { class: "num" }, s.step), el("td", {}, `${s.state.group}/${hex(s.state.room)}`),
      el("td", { class: "num" }, `${s.state.x},${s.state.y}`), el("td", { class: "num" }, s.state.health),
      el("td", {}, s.action_name), el("td", { class: "num" }, fmtNum(s.reward))));
    out.push(el("details", {}, el("summary", {}, `state timeline (${rows.length} frames of ${r.steps.length} steps)`),
      el("div", { class: "scroll short" }, el("table", { class: "list" },
        el("thead", {}, el("tr", {}, ["step", "group/room", "x,y", "health", "action", "reward"].map((h) => el("th", {}, h)))),
        el("tbody", {}, rows)))));
  }
  if (r.notes.length) out.push(el("ul", { class: "notes" }, r.notes.map((n) => el("li", {}, n))));
  return out;
}
