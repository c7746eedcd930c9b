// Small helpers: building elements (text is always set as text, never parsed as HTML: names
// and outputs come from users and benchmarks) and formatting numbers, times and durations.

import { errorLines } from "./api.js";

/** h("a", {href: "#/", class: "x", onclick: f}, "text", child, [more]) */
export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      node.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      node.className = value;
    } else if (name === "dataset") {
      Object.assign(node.dataset, value);
    } else if (name === "value" || name === "checked" || name === "selected") {
      node[name] = value;
    } else {
      node.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
}

/** Replace a node's children. */
export function fill(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

/** A number for people: whole numbers as they are, others to `digits` significant digits. */
export function num(value, digits = 4) {
  if (value === null || value === undefined) return "–";
  if (typeof value !== "number") return String(value);
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value) && Math.abs(value) < 1e7) return String(value);
  const rounded = Number(value.toPrecision(digits));
  if (Math.abs(rounded) >= 1e7 || (rounded !== 0 && Math.abs(rounded) < 1e-4)) {
    return rounded.toExponential(digits - 1);
  }
  return String(rounded);
}

export function pValue(p) {
  if (p === null || p === undefined) return "–";
  return p < 0.001 ? "< 0.001" : p.toPrecision(2);
}

export function percent(share) {
  return share === null || share === undefined ? "–" : `${share.toFixed(1)} %`;
}

/** Seconds as "42 s", "3 min 5 s", "2 h 10 min". */
export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  const s = Math.max(0, seconds);
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

/** The API's timestamps are UTC; one without a zone is read as UTC too. */
export function parseTime(text) {
  if (!text) return null;
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(text) ? text : `${text}Z`);
}

/** A timestamp in the browser's time zone, to the minute: 2026-11-25 15:22. */
export function when(text) {
  const date = parseTime(text);
  if (!date) return "–";
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

export function trialSeconds(trial) {
  const start = parseTime(trial.started_at);
  const end = parseTime(trial.finished_at);
  if (!start) return null;
  return ((end || new Date()) - start) / 1000;
}

/** A configuration as "nodes=3, threads=8". */
export function configText(config) {
  return Object.entries(config || {}).map(([k, v]) => `${k}=${num(v)}`).join(", ");
}

export function badge(status) {
  return h("span", { class: `badge status-${status}` }, status);
}

/** An error box: one line per refused field (the API's words). */
export function errorBox(error) {
  const [head, ...rest] = errorLines(error);
  return h("div", { class: "error", role: "alert" },
    h("strong", {}, head),
    rest.length ? h("ul", {}, rest.map((line) => h("li", {}, line))) : null);
}

/** A table from column definitions: [{label, value: row => text|node, class}]. */
export function table(columns, rows, { rowProps = () => ({}), empty = "nothing yet" } = {}) {
  return h("table", { class: "grid" },
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { class: c.class || "" }, c.label)))),
    h("tbody", {},
      rows.length
        ? rows.map((row) => h("tr", rowProps(row),
          columns.map((c) => h("td", { class: c.class || "" }, c.value(row)))))
        : h("tr", {}, h("td", { colspan: columns.length, class: "muted" }, empty))));
}

/** Call `fn` once `ms` after the last of a burst of calls. */
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
