// Two or more experiments on one response, side by side: each one's answer to deploy with its
// evidence, then the others as what they are (its best single run, its model's predicted
// optimum with intervals) and what matters, then their best-so-far curves and all their values
// on one chart.

import { optimumLabel } from "./analysis.js";
import { api } from "./api.js";
import { compareBoxes, compareCurves, purge, seriesOf } from "./charts.js";
import { badge, configText, errorBox, fill, h, num, percent } from "./dom.js";
import { setQuery } from "./router.js";

export function compareView(root, query) {
  const ids = (query.ids || "").split(",").map(Number).filter((n) => Number.isInteger(n) && n > 0);
  const state = { response: query.response || null, goal: query.goal || null, model: query.model || "auto",
    gone: false, plots: [] };
  const picker = h("div", { class: "picker", id: "compare-picker" });
  const responseSelect = h("select", { id: "compare-response", "aria-label": "response" });
  const goalSelect = h("select", { id: "compare-goal", "aria-label": "goal" },
    ["maximize", "minimize"].map((g) => h("option", { value: g }, g)));
  const columns = h("div", { class: "compare-columns", id: "compare-columns" });
  const curves = h("div", { class: "plot", id: "compare-curves" });
  const boxes = h("div", { class: "plot", id: "compare-boxes" });
  fill(root,
    h("div", { class: "toolbar" }, h("h1", {}, "Compare experiments"),
      h("label", {}, "Response ", responseSelect), h("label", {}, "Goal ", goalSelect)),
    picker, columns,
    h("div", { class: "compare-plots" },
      h("section", { class: "card" }, h("h3", {}, "Best so far"), curves),
      h("section", { class: "card" }, h("h3", {}, "Every measured value"), boxes)));

  responseSelect.addEventListener("change", () => {
    state.response = responseSelect.value;
    setQuery({ response: state.response });
    load();
  });
  goalSelect.addEventListener("change", () => {
    state.goal = goalSelect.value;
    setQuery({ goal: state.goal });
    load();
  });

  // The picker: every experiment of the key's owner, ticked when compared.
  api("/experiments", { params: { limit: 200 } }).then((all) => {
    if (state.gone) return;
    fill(picker, h("span", { class: "muted" }, "Experiments: "), all.map((e) => h("label", { class: "pick" },
      h("input", { type: "checkbox", checked: ids.includes(e.id), dataset: { id: e.id }, onchange: (event) => {
        const chosen = [...picker.querySelectorAll("input:checked")].map((i) => i.dataset.id);
        window.location.hash = `#/compare?ids=${chosen.join(",")}` +
          (state.response ? `&response=${encodeURIComponent(state.response)}` : "");
        event.stopPropagation();
      } }), ` #${e.id} ${e.name}`)));
  }).catch((error) => fill(picker, errorBox(error)));

  if (ids.length < 2) {
    fill(columns, h("p", { class: "muted", id: "compare-hint" },
      "Tick two or more experiments above (or in the list) to compare them on one response."));
    return () => { state.gone = true; };
  }

  let experiments = [];
  let trials = [];
  async function load() {
    try {
      if (!experiments.length) {
        [experiments, trials] = await Promise.all([
          Promise.all(ids.map((i) => api(`/experiments/${i}`))),
          Promise.all(ids.map((i) => api(`/experiments/${i}/trials`))),
        ]);
      }
    } catch (error) {
      fill(columns, errorBox(error));
      return;
    }
    if (state.gone) return;
    const names = new Set(experiments.map((e) => e.objective.response));
    for (const list of trials) for (const t of list) for (const r of Object.keys(t.responses || {})) names.add(r);
    if (!state.response || !names.has(state.response)) state.response = experiments[0].objective.response;
    fill(responseSelect, [...names].map((n) => h("option", { value: n, selected: n === state.response }, n)));
    const own = experiments.find((e) => e.objective.response === state.response);
    state.goal = state.goal || (own ? own.objective.goal : "maximize");
    goalSelect.value = state.goal;
    const analyses = await Promise.all(ids.map((i) => api(`/experiments/${i}/analysis`,
      { params: { response: state.response, model: state.model } }).catch((error) => error)));
    if (state.gone) return;
    const series = trials.map((list) => seriesOf(list, state.response, state.goal));
    fill(columns, experiments.map((e, i) => column(e, series[i], analyses[i])));
    const named = experiments.map((e, i) => ({ name: `#${e.id} ${e.name}`, series: series[i] }));
    compareCurves(curves, named, state.response, state.goal);
    compareBoxes(boxes, named, state.response);
    state.plots = [curves, boxes];
  }

  function column(e, series, analysis) {
    const values = series.map((p) => p.value);
    const best = series.length ? series[series.length - 1].best : null;
    const bestTrial = series.find((p) => p.value === best);
    const failed = analysis instanceof Error;
    return h("section", { class: "card compare-column", dataset: { experiment: e.id } },
      h("h3", {}, h("a", { href: `#/experiments/${e.id}` }, `#${e.id} ${e.name}`), " ", badge(e.status)),
      h("p", { class: "muted" }, `target ${e.target} · ${e.design ? e.design.kind : "observations"} · ` +
        `${e.progress.succeeded || 0} of ${e.progress.total || 0} trials succeeded`),
      failed || !analysis.deploy ? null : h("div", { class: "compare-deploy" },
        h("p", {}, h("strong", {}, analysis.deploy.summary)),
        ((analysis.coverage && analysis.coverage.sentences) || []).map((w) => h("p", { class: "warning small" }, w))),
      h("p", {}, `best single run of ${state.response}: `, h("strong", {}, best === null ? "–" : num(best)),
        values.length ? ` of ${values.length} runs` : " (no run measured it)",
        bestTrial ? ` (trial ${bestTrial.trial}; one measurement, not the answer)` : ""),
      failed ? h("div", {}, h("p", { class: "muted" }, "no model:"), errorBox(analysis)) : h("div", {},
        h("p", {}, "the model's predicted optimum ", h("strong", {}, num(analysis.optimum.predicted)),
          analysis.optimum.ci_low !== null
            ? ` (95 % CI ${num(analysis.optimum.ci_low)} to ${num(analysis.optimum.ci_high)}; ` +
              `PI ${num(analysis.optimum.pi_low)} to ${num(analysis.optimum.pi_high)})` : ""),
        h("p", { class: "small" }, "at ", configText(analysis.optimum.config), ` (${optimumLabel(analysis)})`),
        h("p", { class: "muted small" }, `${analysis.model_label} · R² ${num(analysis.fit.r_squared, 3)}`),
        h("ol", { class: "small" }, analysis.ranked_factors.slice(0, 4).map((f) =>
          h("li", {}, !f.in_model ? `${f.factor}: not in the model`
            : `${f.factor}: ${percent(f.share_of_ss)} of SS, ${f.direction}`))),
        h("p", { class: "small" }, analysis.explanation.sentences[0] || "")));
  }

  load();
  return () => {
    state.gone = true;
    for (const node of state.plots) purge(node);
  };
}
