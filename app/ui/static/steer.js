// Steering an experiment: start, cancel, suggestions (ask, accept), the closed loop, and
// observations for manual targets. Each action is one REST call; what the API refuses is shown
// as it answered (a 422 names the field and the rule). Forms skip the browser's own checks so
// the API stays the one judge of what is valid.

import { api } from "./api.js";
import { configText, errorBox, fill, h, num } from "./dom.js";

const STRATEGIES = ["auto", "augment", "steepest_ascent", "bayes", "replicate"];

/** An <input type=number>'s value as JSON: empty is null (the API then names the field). */
function numberOrNull(input) {
  return input.value.trim() === "" ? null : Number(input.value);
}

function result(node, ...children) {
  fill(node, ...children);
}

const RESTART_HELP = "restart every node before a trial that measures a configuration again";

/** The restart_replicates checkbox, labelled, with its input. */
function restartBox(id) {
  const box = h("input", { type: "checkbox", id });
  return { box, label: h("label", { class: "small", title: RESTART_HELP }, box, " fresh replicates") };
}

export function steerPanel(ctx) {
  const runResult = h("div", { id: "run-result", class: "result" });
  const startFresh = restartBox("start-restart-replicates");
  const startButton = h("button", { type: "button", id: "start", onclick: start }, "Start");
  const cancelButton = h("button", { type: "button", id: "cancel", class: "danger", onclick: cancel },
    "Cancel");

  async function act(node, action, done) {
    result(node, h("span", { class: "muted" }, "…"));
    try {
      const answer = await action();
      result(node, done(answer));
    } catch (error) {
      result(node, errorBox(error));
    }
    ctx.refresh();
  }

  function start() {
    act(runResult, () => api(`/experiments/${ctx.id}/start`, { method: "POST",
      body: { restart_replicates: startFresh.box.checked } }),
      (e) => h("p", { class: "ok" }, `started: ${e.progress.queued || 0} queued`));
  }

  function cancel() {
    if (!window.confirm("Cancel every trial that has not finished, and the closed loop?")) return;
    act(runResult, () => api(`/experiments/${ctx.id}/cancel`, { method: "POST" }),
      (e) => h("p", { class: "ok" }, `cancelled: ${e.progress.cancelled || 0} trials`));
  }

  // Suggestions: ask, then accept one (or one made earlier).
  const strategy = h("select", { id: "suggest-strategy", "aria-label": "strategy" },
    STRATEGIES.map((s) => h("option", { value: s }, s)));
  const count = h("input", { id: "suggest-count", type: "number", value: "1", size: 3,
    "aria-label": "how many" });
  const plan = h("div", { id: "suggest-plan", class: "result" });
  const openList = h("div", { id: "open-suggestions" });
  const suggestForm = h("form", { novalidate: true, onsubmit: (event) => {
    event.preventDefault();
    act(plan, () => api(`/experiments/${ctx.id}/suggestions`, { method: "POST",
      body: { strategy: strategy.value, count: numberOrNull(count) } }), showPlan);
  } },
  h("div", { class: "row" }, h("label", {}, "strategy ", strategy), h("label", {}, "count ", count)),
  h("button", { type: "submit", id: "suggest" }, "Suggest"));

  function showPlan(answer) {
    return h("div", {},
      h("p", {}, h("strong", {}, answer.stage), `: ${answer.explanation}`),
      answer.stop_reason ? h("p", { class: "warning" }, `stop: ${answer.stop_reason}`) : null,
      h("p", { class: "muted small" }, answer.suggestions.length
        ? `${answer.suggestions.length} new: accept them below` : "nothing to suggest"));
  }

  // Kept outside the cards: an accepted card leaves the open list at the next poll.
  const accepted = h("div", { id: "accept-result", class: "result" });

  function suggestionCard(s) {
    const accept = h("button", { type: "button", class: "accept", dataset: { suggestion: s.id },
      disabled: s.status !== "open",
      onclick: () => {
        accept.disabled = true;
        act(accepted, () => api(`/experiments/${ctx.id}/suggestions/${s.id}/accept`,
          { method: "POST" }), (trial) => h("p", { class: "ok" },
          `suggestion #${s.id} became trial ${trial.id} (run ${trial.run_order}), ${trial.status}`));
      } },
    s.status === "open" ? "Accept" : `accepted: trial ${s.trial_id}`);
    return h("div", { class: "suggestion", dataset: { suggestion: s.id } },
      h("div", {}, h("strong", {}, `#${s.id} `), configText(s.config)),
      h("div", { class: "muted small" },
        s.predicted === null ? "" : `predicted ${num(s.predicted)}`,
        s.uncertainty === null ? "" : ` ± ${num(s.uncertainty)}`,
        ` · ${s.strategy}/${s.stage}`),
      s.reason.length > 90
        ? h("details", { class: "small" }, h("summary", {}, `${s.reason.slice(0, 70)}…`), s.reason)
        : h("div", { class: "small" }, s.reason),
      accept);
  }

  // The closed loop.
  const loopStrategy = h("select", { id: "loop-strategy", "aria-label": "loop strategy" },
    ["auto", "bayes"].map((s) => h("option", { value: s }, s)));
  const budget = h("input", { id: "loop-budget", type: "number", value: "10", size: 4,
    "aria-label": "budget" });
  const batch = h("input", { id: "loop-batch", type: "number", value: "1", size: 3,
    "aria-label": "batch size" });
  const budgetSeconds = h("input", { id: "loop-budget-seconds", type: "number", step: "any", size: 6,
    placeholder: "optional", "aria-label": "budget of trial time in seconds" });
  const stopBelow = h("input", { id: "loop-stop-below", type: "number", step: "any", size: 6,
    placeholder: "optional", "aria-label": "stop when the expected improvement is below" });
  const loopResult = h("div", { id: "loop-result", class: "result" });
  const loopFresh = restartBox("loop-restart-replicates");
  const loopForm = h("form", { novalidate: true, onsubmit: (event) => {
    event.preventDefault();
    const body = { strategy: loopStrategy.value, budget: numberOrNull(budget),
      batch_size: numberOrNull(batch), restart_replicates: loopFresh.box.checked };
    if (budgetSeconds.value.trim() !== "") body.budget_seconds = Number(budgetSeconds.value);
    if (stopBelow.value.trim() !== "") body.stop_when_expected_improvement_below = Number(stopBelow.value);
    act(loopResult, () => api(`/experiments/${ctx.id}/optimize`, { method: "POST", body }),
      (loop) => h("p", { class: "ok" }, `loop ${loop.id} ${loop.status}: budget ${loop.budget}`
        + (loop.budget_seconds ? ` or ${loop.budget_seconds} s of trial time` : "") + `, stage ${loop.stage || "–"}`));
  } },
  h("div", { class: "row" }, h("label", {}, "strategy ", loopStrategy), h("label", {}, "budget ", budget)),
  h("div", { class: "row" }, h("label", {}, "batch ", batch), h("label", {}, "stop below ", stopBelow)),
  h("div", { class: "row" }, h("label", {}, "seconds of trial time ", budgetSeconds), loopFresh.label),
  h("button", { type: "submit", id: "optimize" }, "Start the loop"));

  // Observations: one run measured elsewhere (on a manual target, how trials get results).
  const observeFields = h("div", { id: "observe-fields" });
  const extra = h("input", { id: "observe-extra", type: "text", placeholder: "other: qps=20000, errors_per_s=1.5",
    "aria-label": "other responses" });
  const observeResult = h("div", { id: "observe-result", class: "result" });
  const inputs = { config: {}, responses: {} };
  const observeForm = h("form", { novalidate: true, onsubmit: (event) => {
    event.preventDefault();
    act(observeResult, () => api(`/experiments/${ctx.id}/observations`, { method: "POST",
      body: [observation()] }), (trials) => h("p", { class: "ok" },
      `recorded: trial ${trials.map((t) => t.id).join(", ")}`));
  } }, observeFields, extra, h("button", { type: "submit", id: "observe" }, "Record"));

  function observation() {
    const config = {};
    for (const [name, input] of Object.entries(inputs.config)) {
      const factor = ctx.experiment().factors.find((f) => f.name === name);
      const text = input.value.trim();
      // A level is sent as the level itself (a number stays a number).
      const level = (factor.levels || []).find((l) => String(l) === text);
      config[name] = level !== undefined ? level
        : factor.kind === "categorical" || text === "" || Number.isNaN(Number(text)) ? text : Number(text);
    }
    const responses = {};
    for (const [name, input] of Object.entries(inputs.responses)) {
      if (input.value.trim() !== "") responses[name] = Number(input.value);
    }
    for (const pair of extra.value.split(",")) {
      const [name, value] = pair.split("=").map((s) => s.trim());
      if (name) responses[name] = value === undefined || value === "" ? null : Number(value);
    }
    return { config, responses };
  }

  function buildObservationForm(experiment) {
    const objective = experiment.objective;
    const responses = [objective.response,
      ...(objective.constraints || []).map((c) => c.response),
      ...(objective.desirability || []).map((d) => d.response)]
      .filter((r, i, all) => all.indexOf(r) === i);
    inputs.config = {};
    inputs.responses = {};
    fill(observeFields,
      h("div", { class: "muted small" }, "configuration"),
      experiment.factors.map((f) => {
        const input = f.levels
          ? h("select", { "aria-label": f.name }, f.levels.map((l) => h("option", { value: String(l) }, String(l))))
          : h("input", { type: "text", inputmode: "decimal", placeholder: `${f.low}–${f.high}`, "aria-label": f.name });
        inputs.config[f.name] = input;
        return h("label", { class: "field" }, h("span", {}, f.name), input);
      }),
      h("div", { class: "muted small" }, "responses"),
      responses.map((r) => {
        const input = h("input", { type: "text", inputmode: "decimal", "aria-label": r });
        inputs.responses[r] = input;
        return h("label", { class: "field" }, h("span", {}, r), input);
      }));
  }

  const observeSection = h("details", { class: "steer-section", id: "observe-section" },
    h("summary", {}, "Record observations"),
    h("p", { class: "muted small" }, "A run measured elsewhere. On a manual target this is how its trials get",
      " results (a pending trial with the same settings is filled); elsewhere it is an imported run."),
    observeForm, observeResult);

  const node = h("aside", { class: "steer", id: "steer" },
    h("h2", {}, "Steer"),
    h("section", { class: "steer-section", id: "run-section" },
      h("div", { class: "row" }, startButton, cancelButton, startFresh.label), runResult),
    h("details", { class: "steer-section", open: true, id: "suggest-section" },
      h("summary", {}, "Suggest the next runs"), suggestForm, plan,
      h("h4", {}, "Open suggestions"), accepted, openList),
    h("details", { class: "steer-section", open: true, id: "loop-section" },
      h("summary", {}, "Closed loop"),
      h("p", { class: "muted small" }, "Suggest, run, refit, repeat until the budget or the stopping rule."),
      loopForm, loopResult),
    observeSection);

  let built = false;
  return {
    node,
    /** The experiment (and whether its target runs trials) as last polled. */
    update(experiment, runnable, suggestions) {
      if (!built) {
        buildObservationForm(experiment);
        built = true;
        if (!runnable) observeSection.open = true;
      }
      const p = experiment.progress;
      startButton.hidden = !runnable;
      startFresh.label.hidden = !runnable;
      startButton.disabled = !(p.pending > 0);
      startButton.title = p.pending > 0 ? `queue the ${p.pending} pending trials` : "no pending trial";
      const looping = experiment.optimization && experiment.optimization.status === "running";
      cancelButton.disabled = !looping && ["completed", "cancelled"].includes(experiment.status);
      const open = suggestions.filter((s) => s.status === "open" && s.optimization_id === null);
      const shown = openList.dataset.shown;
      const ids = open.map((s) => s.id).join(",");
      if (shown !== ids) {
        openList.dataset.shown = ids;
        fill(openList, open.length ? open.slice(-10).reverse().map(suggestionCard)
          : h("p", { class: "muted small" }, "none"));
      }
    },
    /** Fill the observation form with a pending trial's settings. */
    prefill(config) {
      observeSection.open = true;
      for (const [name, value] of Object.entries(config)) {
        if (inputs.config[name]) inputs.config[name].value = String(value);
      }
      const first = Object.values(inputs.responses)[0];
      if (first) first.focus();
    },
  };
}
