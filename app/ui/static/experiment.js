// One experiment, kept live: its progress and time left, the run table (a trial opens its raw
// output and reproducibility record), the analysis, response surfaces, effect plots and the
// best so far; the steering panel beside them. Polls the API every 2 s while trials run.

import { api } from "./api.js";
import { renderAnalysis, renderEffects } from "./analysis.js";
import { bestSoFar, purge, seriesOf } from "./charts.js";
import { confirmPanel } from "./confirm.js";
import {
  badge, configText, duration, errorBox, fill, h, num, parseTime, table, trialSeconds, when,
} from "./dom.js";
import { setQuery } from "./router.js";
import { steerPanel } from "./steer.js";
import { surfacePanel } from "./surface.js";

const BUSY_MS = 2000; // trials running: the page follows them
const IDLE_MS = 10000; // nothing running here: still notice a start from the CLI
const TABS = [
  ["runs", "Runs"], ["analysis", "Analysis"], ["surface", "Response surface"],
  ["effects", "Effects"], ["best", "Best so far"],
];
const MODELS = ["auto", "linear", "interaction", "quadratic"];

/** The goal for a response: the objective's, or read from a limit on it. */
function goalOf(experiment, response) {
  const objective = experiment.objective;
  if (response === objective.response) return objective.goal;
  const limit = (objective.constraints || []).find((c) => c.response === response);
  if (limit && limit.max !== null && limit.max !== undefined) return "minimize";
  if (/latency|error|abort|fail|paused|queue|rollback/.test(response)) return "minimize";
  return "maximize";
}

export function experimentView(root, id, query) {
  const state = {
    experiment: null, trials: [], suggestions: [], runnable: true,
    tab: TABS.some(([t]) => t === query.tab) ? query.tab : "runs",
    response: query.response || null, model: MODELS.includes(query.model) ? query.model : "auto",
    fitKey: null, analysis: null, analysisError: null, analysisFor: null, analysisLoad: null,
    surface: null, plots: [], timer: null, gone: false, trialsKey: null, painted: null,
  };

  const header = h("div", { class: "exp-header", id: "exp-header" }, h("p", { class: "muted" }, "loading…"));
  const progress = h("section", { class: "card progress-panel", id: "progress" });
  const responseSelect = h("select", { id: "response", "aria-label": "response", onchange: () => {
    state.response = responseSelect.value; setQuery({ response: state.response }); refit();
  } });
  const modelSelect = h("select", { id: "model", "aria-label": "model", onchange: () => {
    state.model = modelSelect.value; setQuery({ model: state.model }); refit();
  } }, MODELS.map((m) => h("option", { value: m, selected: m === state.model }, m)));
  const tabButtons = TABS.map(([name, text]) => h("button", { type: "button", role: "tab",
    class: "tab", dataset: { tab: name }, onclick: () => showTab(name) }, text));
  const fitControls = h("span", { class: "fit-controls" },
    h("label", {}, "Response ", responseSelect), h("label", {}, "Model ", modelSelect));
  const body = h("div", { id: "tab-content" });
  const dialog = h("dialog", { id: "trial-dialog" });
  const confirmation = confirmPanel({ id, refresh: () => poll() });
  const steer = steerPanel({
    id,
    experiment: () => state.experiment,
    refresh: () => poll(),
  });

  fill(root, h("div", { class: "exp-layout" },
    h("div", { class: "exp-main" }, header, confirmation.node, progress,
      h("div", { class: "tabs", role: "tablist" }, tabButtons),
      h("section", { class: "tab-body", id: "tab-body" }, fitControls, body)),
    steer.node), dialog);

  function showTab(name) {
    state.tab = name;
    setQuery({ tab: name });
    paint(true);
  }

  function refit() {
    state.fitKey = null;
    paint(true);
  }

  // --- polling -------------------------------------------------------------------------
  async function poll() {
    clearTimeout(state.timer);
    try {
      const [experiment, trials, suggestions, confirmations] = await Promise.all([
        api(`/experiments/${id}`),
        api(`/experiments/${id}/trials`),
        api(`/experiments/${id}/suggestions`),
        api(`/experiments/${id}/confirmations`),
      ]);
      if (state.gone) return;
      const first = state.experiment === null;
      state.experiment = experiment;
      state.trials = trials;
      state.suggestions = suggestions;
      if (first) await firstLoad();
      renderHeader();
      renderProgress();
      confirmation.update(experiment, confirmations);
      steer.update(experiment, state.runnable, suggestions);
      updateResponses();
      paint(false);
    } catch (error) {
      if (state.gone) return;
      fill(header, errorBox(error));
      if (error.status === 404 || error.status === 401) return; // nothing to follow
    }
    if (state.gone) return;
    const e = state.experiment;
    const busy = e && (e.status === "running" || (e.optimization && e.optimization.status === "running"));
    state.timer = setTimeout(poll, busy ? BUSY_MS : IDLE_MS);
  }

  async function firstLoad() {
    try {
      const targets = await api("/targets");
      const target = targets.find((t) => t.name === state.experiment.target);
      state.runnable = target ? target.runnable : true;
    } catch {
      state.runnable = true; // the start button then lets the API say what it thinks
    }
    document.title = `${state.experiment.name} · galera-doe`;
  }

  function updateResponses() {
    const seen = new Set([state.experiment.objective.response]);
    for (const t of state.trials) for (const name of Object.keys(t.responses || {})) seen.add(name);
    const names = [...seen];
    if (!state.response || !seen.has(state.response)) state.response = state.experiment.objective.response;
    if (responseSelect.dataset.names !== names.join(",")) {
      responseSelect.dataset.names = names.join(",");
      fill(responseSelect, names.map((n) => h("option", { value: n, selected: n === state.response }, n)));
    }
  }

  // --- header and progress -----------------------------------------------------------------
  function renderHeader() {
    const e = state.experiment;
    const o = e.objective;
    const limits = (o.constraints || []).map((c) =>
      [c.min !== null && c.min !== undefined ? `${c.response} ≥ ${c.min}` : null,
        c.max !== null && c.max !== undefined ? `${c.response} ≤ ${c.max}` : null].filter(Boolean).join(", "));
    fill(header,
      h("div", { class: "crumbs" }, h("a", { href: "#/" }, "Experiments"), " / ", `#${e.id}`),
      h("h1", {}, e.name, " ", badge(e.status)),
      h("p", { class: "muted" },
        `target ${e.target} · ${o.goal} ${o.response}`, limits.length ? ` with ${limits.join(", ")}` : "",
        e.design ? ` · design ${e.design.kind}` : " · no design (observations)",
        ` · ${e.factors.length} factors: ${e.factors.map((f) => f.name).join(", ")}`,
        ` · created ${when(e.created_at)}`));
  }

  function renderProgress() {
    const e = state.experiment;
    const p = e.progress;
    const finished = (p.succeeded || 0) + (p.failed || 0) + (p.cancelled || 0);
    const total = p.total || 0;
    const t = e.timing || {};
    const finishAt = parseTime(t.estimated_finish_at);
    const loop = e.optimization;
    const bar = h("progress", { id: "progress-bar", max: total || 1, value: finished,
      dataset: { finished, total } });
    fill(progress,
      h("div", { class: "progress-line" }, bar,
        h("span", { id: "progress-text", class: "big" }, `${finished} of ${total} trials done`)),
      h("p", { class: "counts" },
        ["pending", "queued", "running", "succeeded", "failed", "cancelled"]
          .filter((s) => p[s]).map((s) => h("span", { class: `count status-${s}` }, `${p[s]} ${s}`))),
      h("p", { id: "time-left" }, [
        !state.runnable ? (p.pending ? `${p.pending} trials await their observations` : null)
          : t.remaining_s !== null && t.remaining_s !== undefined && e.status === "running"
          ? `about ${duration(t.remaining_s)} left` + (finishAt ? ` (done near ${finishAt.toLocaleTimeString()})` : "")
          : e.status === "running" ? "time left: known once a trial has finished" : null,
        t.elapsed_s !== null && t.elapsed_s !== undefined ? `elapsed ${duration(t.elapsed_s)}` : null,
        t.mean_trial_s ? `${duration(t.mean_trial_s)} a trial` : null,
      ].filter(Boolean).join(" · ")),
      e.best ? h("p", { id: "best" }, "Best single run so far: ", h("strong", {}, `${e.objective.response} ${num(e.best.value)}`),
        ` at ${configText(e.best.config)} (trial ${e.best.trial_id}; one measurement, not the answer to deploy)`) : null,
      loop ? h("p", { id: "loop-status" }, `Closed loop ${loop.status}: ${loop.trials_used} of ${loop.budget} trials`,
        loop.budget_seconds ? `, ${duration(loop.seconds_used)} of ${duration(loop.budget_seconds)} of trial time` : "",
        `, round ${loop.rounds}`, loop.stage ? `, stage ${loop.stage}` : "",
        loop.expected_improvement !== null ? `, expected improvement ${num(loop.expected_improvement)}` : "",
        loop.stop_reason ? ` · stopped: ${loop.stop_reason}` : "", loop.error ? ` · error: ${loop.error}` : "") : null,
      loop && loop.deploy ? h("p", { id: "loop-deploy" }, h("strong", {}, loop.deploy.summary),
        h("span", { class: "muted small" }, ` ${loop.deploy.reason}`)) : null);
  }

  // --- the tabs ----------------------------------------------------------------------------
  /** Draw the current tab; `force` when the tab, response or model changed. */
  function paint(force) {
    if (!state.experiment) return;
    for (const b of tabButtons) b.classList.toggle("on", b.dataset.tab === state.tab);
    fitControls.hidden = state.tab === "runs";
    modelSelect.parentElement.hidden = state.tab === "best"; // the best so far is measured, not fitted
    const trialsKey = state.trials.map((t) => `${t.id}:${t.status}:${t.attempts}`).join(",") +
      `|${state.suggestions.length}`;
    const fitKey = `${state.response}|${state.model}|` +
      state.trials.filter((t) => t.status === "succeeded").map((t) => t.id).join(",");
    const changed = trialsKey !== state.trialsKey;
    state.trialsKey = trialsKey;
    if (state.tab === "runs") {
      if (force || changed || state.painted !== "runs") renderRuns();
    } else if (state.tab === "best") {
      if (force || changed || state.painted !== "best") renderBest();
    } else if (force || fitKey !== state.fitKey || state.painted !== state.tab) {
      state.fitKey = fitKey;
      renderFitted();
    }
    state.painted = state.tab;
  }

  function clearPlots() {
    for (const node of state.plots) purge(node);
    state.plots = [];
    if (state.surface && state.tab !== "surface") {
      state.surface.leave();
      state.surface = null;
    }
  }

  function renderRuns() {
    clearPlots();
    const e = state.experiment;
    const objective = e.objective.response;
    // At most two more responses, so the table fits at 1280 px: the objective's limits, else
    // the p95 latency a DBA checks next; every response is in the trial's own view.
    const measured = new Set(state.trials.flatMap((t) => Object.keys(t.responses || {})));
    const others = [...(e.objective.constraints || []).map((c) => c.response), "latency_p95_ms"]
      .filter((r, i, all) => r !== objective && measured.has(r) && all.indexOf(r) === i).slice(0, 2);
    const manual = !state.runnable;
    fill(body, table([
      { label: "run", value: (t) => t.run_order, class: "num" },
      { label: "trial", value: (t) => h("a", { href: "#", class: "trial-link", dataset: { trial: t.id },
        onclick: (event) => { event.preventDefault(); openTrial(t.id); } }, `#${t.id}`), class: "num" },
      { label: "point", value: (t) => (t.source === "design" ? t.point_type : `${t.point_type} (${t.source})`)
        + (t.restart_first ? " · fresh" : "") },
      ...e.factors.map((f) => ({ label: f.name, value: (t) => num(t.config[f.name]), class: "num" })),
      { label: "status", value: (t) => badge(t.status) },
      { label: objective, value: (t) => (t.responses ? num(t.responses[objective]) : ""), class: "num strong" },
      ...others.map((r) => ({ label: r, value: (t) => (t.responses ? num(t.responses[r]) : ""), class: "num" })),
      { label: "attempts", value: (t) => t.attempts, class: "num" },
      { label: "duration", value: (t) => (t.worker && t.started_at ? duration(trialSeconds(t)) : ""), class: "num" },
      { label: "", value: (t) => (t.error ? h("span", { class: "error-text", title: t.error }, t.failure || "error")
        : manual && t.status === "pending" ? h("button", { type: "button", class: "link",
          onclick: () => steer.prefill(t.config) }, "record…") : "") },
    ], state.trials, { rowProps: (t) => ({ class: `trial status-${t.status}`, dataset: { trial: t.id } }),
      empty: "No trials: record observations, or ask for suggestions." }));
  }

  async function openTrial(trialId) {
    fill(dialog, h("p", { class: "muted" }, "loading…"));
    dialog.showModal();
    try {
      const t = await api(`/trials/${trialId}`);
      const close = h("button", { type: "button", onclick: () => dialog.close() }, "Close");
      fill(dialog,
        h("div", { class: "dialog-head" }, h("h2", {}, `Trial ${t.id} (run ${t.run_order}) `, badge(t.status)), close),
        h("p", {}, configText(t.config)),
        h("p", { class: "muted" }, `${t.point_type} · ${t.source} · block ${t.block}`,
          t.whole_plot ? ` · whole plot ${t.whole_plot}` : "", ` · attempts ${t.attempts}`,
          t.worker ? ` · worker ${t.worker}` : "",
          t.started_at ? ` · started ${when(t.started_at)} · ${duration(trialSeconds(t))}` : ""),
        t.error ? h("pre", { class: "error-text" }, t.error) : null,
        t.responses ? h("dl", { class: "responses", id: "trial-responses" },
          Object.entries(t.responses).map(([k, v]) => [h("dt", {}, k), h("dd", {}, num(v, 6))])) : null,
        h("h3", {}, "Raw output"),
        t.raw_output ? h("pre", { class: "raw", id: "raw-output" }, t.raw_output)
          : h("p", { class: "muted" }, "none (not run by a benchmark, or not finished)"),
        h("h3", {}, "Reproducibility record"),
        t.record ? h("pre", { class: "raw", id: "trial-record" }, JSON.stringify(t.record, null, 2))
          : h("p", { class: "muted" }, "none recorded for this trial"));
    } catch (error) {
      fill(dialog, errorBox(error), h("button", { type: "button", onclick: () => dialog.close() }, "Close"));
    }
  }

  /** The analysis of the current response, model and runs: fetched once for each. */
  function fetchAnalysis() {
    const key = state.fitKey;
    if (state.analysisFor === key) return state.analysisLoad;
    state.analysisFor = key;
    state.analysisLoad = api(`/experiments/${id}/analysis`,
      { params: { response: state.response, model: state.model } })
      .then((analysis) => {
        if (state.analysisFor !== key) return;
        state.analysis = analysis;
        state.analysisError = null;
      }, (error) => {
        if (state.analysisFor !== key) return;
        state.analysis = null;
        state.analysisError = error;
      });
    return state.analysisLoad;
  }

  async function renderFitted() {
    const tab = state.tab;
    if (!state.trials.some((t) => t.status === "succeeded")) {
      clearPlots();
      fill(body, h("p", { class: "muted" }, "No finished trial yet: the analysis needs results."));
      return;
    }
    if (tab !== "surface" || !state.surface) fill(body, h("p", { class: "muted" }, "fitting…"));
    await fetchAnalysis();
    if (state.gone || state.tab !== tab) return;
    if (!state.analysis) {
      clearPlots();
      fill(body, h("p", {}, "The analysis is not available yet:"), errorBox(state.analysisError));
      return;
    }
    const ctx = { experiment: state.experiment, analysis: state.analysis, response: state.response,
      model: state.model, query, setQuery };
    if (tab === "analysis") {
      clearPlots();
      renderAnalysis(body, state.analysis, state.experiment);
    } else if (tab === "effects") {
      clearPlots();
      state.plots = renderEffects(body, state.analysis, state.experiment);
    } else if (tab === "surface") {
      if (state.surface) state.surface.update(ctx);
      else state.surface = surfacePanel(body, ctx);
    }
  }

  function renderBest() {
    clearPlots();
    const e = state.experiment;
    const response = state.response || e.objective.response;
    const goal = goalOf(e, response);
    const loopTrials = new Set(state.suggestions.filter((s) => s.optimization_id !== null && s.trial_id)
      .map((s) => s.trial_id));
    const series = seriesOf(state.trials, response, goal, loopTrials);
    const plot = h("div", { class: "plot", id: "best-plot" });
    const loop = e.optimization;
    fill(body,
      h("p", {}, `${response}: each finished trial in the order it finished, and the best so far (${goal}).`,
        loop ? ` The closed loop's trials are green: ${loop.trials_used} of its budget of ${loop.budget}.` : ""),
      series.length ? plot : h("p", { class: "muted" }, "No finished trial has measured it yet."));
    if (series.length) {
      bestSoFar(plot, series, response, goal);
      state.plots = [plot];
    }
  }

  poll();
  return () => {
    state.gone = true;
    clearTimeout(state.timer);
    clearPlots();
    if (state.surface) state.surface.leave();
    if (dialog.open) dialog.close();
  };
}
