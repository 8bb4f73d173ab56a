// Helpers every part of the page uses: the access token, REST calls, DOM building and number formats.

// The token arrives once in the address (?token=...); keep it for this tab only and take it out of the
// address bar, so it does not end up in bookmarks, screenshots or shared links.
export const token = (() => {
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

export const $ = (id) => document.getElementById(id);

function authorized(path) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  return fetch(new URL(path, location.href), { headers });
}

async function failure(path, response) {
  let detail = (await response.text()).slice(0, 300);
  try { detail = JSON.parse(detail).detail ?? detail; } catch (e) { /* not JSON: show the text */ }
  return new Error(`${path}: ${response.status} ${detail}`);
}

export async function api(path) {
  const response = await authorized(path);
  if (!response.ok) throw await failure(path, response);
  return response.json();
}

// Media (a replay's GIF or MP4) fetched with the token header, as an object URL for <img>/<video>: the token
// never goes into a src attribute.
export async function apiBlobUrl(path) {
  const response = await authorized(path);
  if (!response.ok) throw await failure(path, response);
  return URL.createObjectURL(await response.blob());
}

export const isNum = (v) => v !== null && v !== undefined && Number.isFinite(Number(v));
export const fmtInt = (v) => (isNum(v) ? Math.round(v).toLocaleString("en-US") : "–");
export const fmtNum = (v, digits = 2) => (isNum(v) ? Number(v).toFixed(digits) : "–");
export const fmtPct = (v) => (isNum(v) ? `${(v * 100).toFixed(1)}%` : "–");
export const hex = (n) => `0x${Number(n).toString(16).padStart(2, "0")}`;

// Env steps on an axis: 950, 2.25k, 12.5k, 1.25M.
export function fmtSteps(v) {
  if (!isNum(v)) return "–";
  const a = Math.abs(v);
  if (a >= 1e6) return `${+(v / 1e6).toFixed(2)}M`;
  if (a >= 1e3) return `${+(v / 1e3).toFixed(2)}k`;
  return String(Math.round(v));
}

export function setText(id, text) {
  const node = typeof id === "string" ? $(id) : id;
  if (node.textContent !== String(text)) node.textContent = text;
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "title") node.title = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// A metric name (episode/return_env_mean) that may break after each "/" and "_" on a narrow screen.
export function metricName(name) {
  const node = el("span", { class: "metric", title: name });
  name.split(/(?<=[/_])/).forEach((part, i) => {
    if (i) node.append(document.createElement("wbr"));
    node.append(part);
  });
  return node;
}
