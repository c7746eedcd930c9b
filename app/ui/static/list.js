// The experiments list: name, target, status, progress, best so far, created; filtered by
// status and target (kept in the address), refreshed while it is open. Ticked rows compare.

import { api } from "./api.js";
import { badge, errorBox, fill, h, num, table, when } from "./dom.js";
import { setQuery } from "./router.js";

const STATUSES = ["planned", "running", "completed", "cancelled"];
const REFRESH_MS = 5000;

export function listView(root, query) {
  const filters = { status: query.status || "", target: query.target || "" };
  const picked = new Set(); // experiment ids ticked for comparison
  const statusSelect = h("select", { id: "filter-status", "aria-label": "status",
    onchange: () => { filters.status = statusSelect.value; setQuery(filters); load(); } },
  h("option", { value: "" }, "any status"),
  STATUSES.map((s) => h("option", { value: s, selected: s === filters.status }, s)));
  const targetSelect = h("select", { id: "filter-target", "aria-label": "target",
    onchange: () => { filters.target = targetSelect.value; setQuery(filters); load(); } },
  h("option", { value: "" }, "any target"));
  const compareButton = h("button", { id: "compare-picked", type: "button", disabled: true,
    onclick: () => { window.location.hash = `#/compare?ids=${[...picked].join(",")}`; } },
  "Compare ticked");
  const body = h("div", { id: "experiments" }, h("p", { class: "muted" }, "loading…"));
  const stamp = h("span", { class: "muted small" });
  fill(root,
    h("div", { class: "toolbar" },
      h("h1", {}, "Experiments"),
      h("label", {}, "Status ", statusSelect),
      h("label", {}, "Target ", targetSelect),
      compareButton, stamp),
    body);

  api("/targets").then((targets) => {
    const names = new Set(targets.map((t) => t.name));
    if (filters.target) names.add(filters.target);
    for (const name of [...names].sort()) {
      targetSelect.append(h("option", { value: name, selected: name === filters.target }, name));
    }
  }).catch(() => {}); // the list itself shows the error

  function progressCell(e) {
    const p = e.progress || {};
    const done = (p.succeeded || 0) + (p.failed || 0) + (p.cancelled || 0);
    const total = p.total || 0;
    return h("div", { class: "progress-cell" },
      h("progress", { max: total || 1, value: done }),
      h("span", {}, `${p.succeeded || 0}/${total}`,
        p.running ? ` · ${p.running} running` : "",
        p.failed ? ` · ${p.failed} failed` : ""));
  }

  function bestCell(e) {
    if (!e.best) return "–";
    return h("span", { title: Object.entries(e.best.config).map(([k, v]) => `${k}=${v}`).join(", ") },
      `${e.objective.response} ${num(e.best.value)}`);
  }

  function tick(e) {
    return h("input", { type: "checkbox", "aria-label": `compare ${e.name}`, checked: picked.has(e.id),
      onchange: (event) => {
        if (event.target.checked) picked.add(e.id); else picked.delete(e.id);
        compareButton.disabled = picked.size < 2;
      } });
  }

  let timer = null;
  let gone = false;
  let latest = 0; // answers to an earlier filter that arrive late are dropped
  async function load() {
    clearTimeout(timer);
    const asked = ++latest;
    try {
      const experiments = await api("/experiments", {
        params: { status: filters.status, target: filters.target, limit: 200 },
      });
      if (gone || asked !== latest) return;
      fill(body, table([
        { label: "", value: tick, class: "narrow" },
        { label: "id", value: (e) => e.id, class: "num" },
        { label: "name", value: (e) => h("a", { href: `#/experiments/${e.id}` }, e.name) },
        { label: "target", value: (e) => e.target },
        { label: "status", value: (e) => badge(e.status) },
        { label: "progress", value: progressCell },
        { label: "best so far", value: bestCell, class: "num" },
        { label: "created", value: (e) => when(e.created_at) },
      ], experiments, { empty: "No experiments here yet: submit one with `galera-doe submit FILE.yaml`." }));
      compareButton.disabled = picked.size < 2;
      stamp.textContent = `updated ${new Date().toLocaleTimeString()}`;
    } catch (error) {
      if (gone || asked !== latest) return;
      fill(body, errorBox(error));
    }
    if (!gone) timer = setTimeout(load, REFRESH_MS);
  }
  load();
  return () => { gone = true; clearTimeout(timer); };
}
