// The response-surface tab: any two factors picked from menus, every other factor held at the
// optimum or where its slider puts it; contour and 3-D from GET /experiments/{id}/surface.

import { api } from "./api.js";
import { contour, line, purge, surface3d } from "./charts.js";
import { debounce, errorBox, fill, h, num } from "./dom.js";

const GRID = 30; // settings per axis: smooth enough, and one request stays well under a second

/** A slider's positions for a factor: its levels, or steps across its range. */
function positions(factor) {
  if (factor.levels) return [...factor.levels];
  const low = Number(factor.low);
  const high = Number(factor.high);
  if (factor.kind === "integer" && high - low <= 200) {
    return Array.from({ length: high - low + 1 }, (_, i) => low + i);
  }
  const steps = 50;
  return Array.from({ length: steps + 1 }, (_, i) => {
    const t = i / steps;
    const value = factor.scale === "log2"
      ? 2 ** (Math.log2(low) + t * (Math.log2(high) - Math.log2(low)))
      : low + t * (high - low);
    return factor.kind === "integer" ? Math.round(value) : Number(value.toPrecision(6));
  }).filter((v, i, all) => all.indexOf(v) === i);
}

function nearest(values, value) {
  let best = 0;
  values.forEach((v, i) => {
    if (typeof v === "number" && Math.abs(v - value) < Math.abs(values[best] - value)) best = i;
    if (String(v) === String(value)) best = i;
  });
  return best;
}

/**
 * The surface panel of one experiment. `ctx` gives the experiment, the analysis (for the
 * default factors and the optimum) and the chosen response and model.
 * Returns {update(ctx), leave()}.
 */
export function surfacePanel(root, initial) {
  let ctx = initial;
  const factors = Object.fromEntries(ctx.experiment.factors.map((f) => [f.name, f]));
  const names = ctx.experiment.factors.map((f) => f.name);
  const ranked = ctx.analysis.ranked_factors.map((e) => e.factor);
  const order = [...ranked, ...names.filter((n) => !ranked.includes(n))];
  const state = {
    x: ctx.query.sx && factors[ctx.query.sx] ? ctx.query.sx : order[0],
    y: ctx.query.sy && factors[ctx.query.sy] ? ctx.query.sy : order[1] || null,
    view: ctx.query.view || "contour",
    held: {}, // factor -> value the user moved its slider to
    request: 0,
  };
  if (state.y === state.x) state.y = order.find((n) => n !== state.x) || null;

  const xSelect = h("select", { id: "surface-x", "aria-label": "x factor" });
  const ySelect = h("select", { id: "surface-y", "aria-label": "y factor" });
  for (const name of names) {
    xSelect.append(h("option", { value: name, selected: name === state.x }, name));
    ySelect.append(h("option", { value: name, selected: name === state.y }, name));
  }
  const viewButtons = ["contour", "3d", "both"].map((v) => h("button", {
    type: "button", class: "seg", dataset: { view: v },
    onclick: () => { state.view = v; ctx.setQuery({ view: v }); paint(); },
  }, v === "3d" ? "3-D" : v === "both" ? "both" : "contour"));
  const sliders = h("div", { class: "sliders", id: "surface-sliders" });
  const plots = h("div", { class: "surface-plots" });
  const contourNode = h("div", { class: "plot", id: "surface-contour" });
  const surfaceNode = h("div", { class: "plot", id: "surface-3d" });
  const status = h("div", { class: "muted small", id: "surface-status" });
  const errors = h("div");
  plots.append(contourNode, surfaceNode);
  fill(root,
    h("div", { class: "toolbar" },
      h("label", {}, "x ", xSelect),
      h("label", { hidden: names.length < 2 }, "y ", ySelect), // one factor: a line, no y
      h("span", { class: "segmented" }, viewButtons), status),
    h("div", { class: "surface-layout" },
      plots,
      h("div", { class: "surface-side" },
        h("h3", {}, "Other factors"),
        h("p", { class: "muted small" }, "Held at the optimum until you move them."),
        sliders,
        h("button", { type: "button", class: "link", id: "surface-reset",
          onclick: () => { state.held = {}; buildSliders(); load(); } }, "all back to the optimum"),
        h("div", { class: "legend-note small" },
          h("p", {}, h("span", { class: "swatch grey" }), "extrapolation: no runs nearby"),
          h("p", {}, h("span", { class: "swatch red" }), "a constraint or a response limit is broken"),
          h("p", {}, "○ runs (projected onto the plane) · ★ the optimum")))),
    errors);

  // Picking the other axis's factor swaps the two axes instead of plotting one factor twice.
  function onAxisChange(select, axis, other, otherSelect) {
    select.addEventListener("change", () => {
      if (select.value === state[other]) { state[other] = state[axis]; otherSelect.value = state[other]; }
      state[axis] = select.value;
      ctx.setQuery({ sx: state.x, sy: state.y });
      buildSliders();
      load();
    });
  }
  onAxisChange(xSelect, "x", "y", ySelect);
  onAxisChange(ySelect, "y", "x", xSelect);

  function heldValue(name) {
    return name in state.held ? state.held[name] : ctx.analysis.optimum.config[name];
  }

  function buildSliders() {
    const others = names.filter((n) => n !== state.x && n !== state.y);
    fill(sliders, others.length ? others.map((name) => {
      const factor = factors[name];
      const values = positions(factor);
      const shown = h("output", { class: "slider-value" }, num(heldValue(name)));
      const slider = h("input", { type: "range", min: 0, max: values.length - 1, step: 1,
        value: String(nearest(values, heldValue(name))), "aria-label": `hold ${name}`,
        dataset: { factor: name } });
      const changed = debounce(() => load(), 250);
      const mark = h("span", { class: "muted small at-optimum", hidden: name in state.held }, "(optimum)");
      slider.addEventListener("input", () => {
        state.held[name] = values[Number(slider.value)];
        shown.textContent = num(state.held[name]);
        mark.hidden = String(state.held[name]) !== String(ctx.analysis.optimum.config[name]);
        changed();
      });
      return h("div", { class: "slider" }, h("label", {}, h("span", {}, name), shown, mark), slider);
    }) : h("p", { class: "muted small" }, "none: the experiment has no other factor"));
  }

  let slice = null;
  async function load() {
    const request = ++state.request;
    const held = Object.entries(state.held)
      .filter(([name]) => name !== state.x && name !== state.y)
      .map(([name, value]) => `${name}:${value}`);
    status.textContent = "fitting…";
    try {
      const answer = await api(`/experiments/${ctx.experiment.id}/surface`, {
        params: { x: state.x, y: state.y, response: ctx.response, model: ctx.model,
          points: GRID, continuous: true, held },
      });
      if (request !== state.request) return; // a newer request is under way
      slice = answer;
      fill(errors);
      status.textContent = `${answer.model_label} · ${ctx.analysis.trials_used} runs`;
      paint();
    } catch (error) {
      if (request !== state.request) return;
      status.textContent = "";
      fill(errors, errorBox(error));
    }
  }

  function paint() {
    for (const button of viewButtons) button.classList.toggle("on", button.dataset.view === state.view);
    if (!slice) return;
    const optimum = slice.optimum;
    if (!slice.y) {
      surfaceNode.hidden = true;
      contourNode.hidden = false;
      line(contourNode, slice, factors, optimum, slice.response);
      return;
    }
    contourNode.hidden = state.view === "3d";
    surfaceNode.hidden = state.view === "contour";
    plots.classList.toggle("both", state.view === "both");
    if (!contourNode.hidden) contour(contourNode, slice, factors, optimum, slice.response);
    else purge(contourNode);
    if (!surfaceNode.hidden) surface3d(surfaceNode, slice, factors, optimum, slice.response);
    else purge(surfaceNode);
  }

  buildSliders();
  load();
  return {
    /** New runs, another response or model: keep the factors and sliders, fetch again. */
    update(next) {
      ctx = next;
      buildSliders();
      load();
    },
    leave() {
      state.request += 1;
      purge(contourNode);
      purge(surfaceNode);
    },
  };
}
