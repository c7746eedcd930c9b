// The analysis tab (what the runs cover, the one answer to deploy with the other candidates
// labelled, model, fit, explanation, the model's predicted optimum with intervals, ranked
// factors, ANOVA, coefficients) and the effects tab (main-effect profiles and the ranked
// factors as bars).

import { mainEffects, pareto } from "./charts.js";
import { configText, fill, h, num, pValue, percent, table } from "./dom.js";

function interval(low, high) {
  return low === null || low === undefined ? "–" : `${num(low)} to ${num(high)}`;
}

/** The one answer to deploy, its reason and evidence, then the others as what they are. */
export function deployCard(analysis) {
  const answer = analysis.deploy;
  const warnings = (analysis.coverage && analysis.coverage.sentences) || [];
  return h("section", { class: "card", id: "analysis-deploy" },
    h("h3", {}, "What to deploy"),
    warnings.map((w) => h("p", { class: "warning coverage-warning" }, w)),
    answer ? [
      h("p", { class: "big deploy-summary" }, answer.summary),
      h("p", { class: "muted small" }, answer.reason),
      analysis.baseline ? h("p", { id: "analysis-baseline" }, analysis.baseline.summary) : null,
      answer.caveats.map((c) => h("p", { class: "warning" }, c)),
      answer.alternatives.length ? h("div", {},
        h("p", { class: "muted" }, "Not the answer, for comparison:"),
        h("ul", { class: "alternatives" }, answer.alternatives.map((a) =>
          h("li", { dataset: { kind: a.kind } }, h("strong", {}, a.label), `: ${a.summary}`)))) : null,
    ] : h("p", { class: "muted" }, "Nothing to deploy yet: no run has measured the objective."));
}

/** What the model's predicted optimum is beside the answer to deploy. */
export function optimumLabel(analysis) {
  const answer = analysis.deploy;
  if (!answer) return "a prediction of the model";
  if (configText(answer.config) === configText(analysis.optimum.config)) return "it is also the configuration to deploy";
  const own = answer.alternatives.find((a) => a.kind === "predicted_optimum");
  return `${own ? own.label : "a prediction of the model"}: not the configuration to deploy`;
}

export function renderAnalysis(root, analysis, experiment) {
  const fit = analysis.fit;
  const optimum = analysis.optimum;
  const units = Object.fromEntries(experiment.factors.map((f) => [f.name, f.unit || ""]));
  const explanation = analysis.explanation;
  const leftOut = new Set(analysis.ranked_factors.filter((e) => !e.in_model).map((e) => e.factor));
  const fixed = new Set(analysis.ranked_factors.filter((e) => e.settings_run < 2).map((e) => e.factor));
  const settingNote = (name) => (fixed.has(name) ? "the only setting run: untested"
    : leftOut.has(name) ? "not in the model: any setting"
    : name in optimum.on_edge ? `at the ${optimum.on_edge[name]} end of its range` : "");
  fill(root,
    deployCard(analysis),
    h("div", { class: "analysis-grid" },
      h("section", { class: "card", id: "analysis-model" },
        h("h3", {}, "Model"),
        h("p", { class: "model-label" }, analysis.model_label),
        h("p", { class: "muted" },
          `${analysis.trials_used} runs`,
          analysis.trials_failed ? ` (${analysis.trials_failed} failed, left out)` : "",
          ` · R² ${num(fit.r_squared, 3)} · adjusted ${num(fit.adj_r_squared, 3)}`,
          ` · predicted ${num(fit.predicted_r_squared, 3)} · RMSE ${num(fit.rmse)}`,
          ` · residual df ${fit.residual_df}`),
        h("h3", {}, "Explanation"),
        explanation.confident ? null
          : h("p", { class: "warning" }, "The model is not sure enough to trust its optimum."),
        h("ul", { class: "explanation", id: "explanation" },
          explanation.sentences.map((s) => h("li", {}, s)))),
      h("section", { class: "card", id: "analysis-optimum" },
        h("h3", {}, `The model's predicted optimum (${analysis.goal} ${analysis.response})`),
        h("p", { class: "muted", id: "optimum-label" }, optimumLabel(analysis)),
        h("p", { class: "big" }, `${analysis.response} ${num(optimum.predicted)}`),
        h("p", {}, `95 % confidence interval ${interval(optimum.ci_low, optimum.ci_high)}`),
        h("p", {}, `95 % prediction interval ${interval(optimum.pi_low, optimum.pi_high)}`),
        table([
          { label: "factor", value: ([name]) => name },
          { label: "setting", value: ([name, value]) => `${num(value)} ${units[name] || ""}`, class: "num" },
          { label: "", value: ([name]) => settingNote(name), class: "muted small" },
        ], Object.entries(optimum.config)),
        Object.keys(optimum.limits_met || {}).length
          ? h("p", { class: "muted small" }, "Limits met: ",
            Object.entries(optimum.limits_met).map(([k, v]) => `${k} ${num(v)}`).join(", "))
          : null,
        h("p", { class: "muted small" }, `searched over ${optimum.region}`,
          optimum.neighbours_checked ? ", integer neighbours checked" : ""))),
    h("section", { class: "card" },
      h("h3", {}, "Factors, most important first"),
      table([
        { label: "factor", value: (e) => e.factor },
        { label: "share of SS", value: (e) => percent(e.share_of_ss), class: "num" },
        { label: "effect at centre", value: (e) => (e.settings_run < 2 ? "never varied"
          : `${num(e.effect)} (${num(e.low)}→${num(e.high)})`), class: "num" },
        { label: "change at optimum", value: (e) => (e.settings_run < 2 ? "" : num(e.change_at_optimum)), class: "num" },
        { label: "direction", value: (e) => e.direction },
        { label: "p", value: (e) => pValue(e.p_value), class: "num" },
      ], analysis.ranked_factors, { rowProps: () => ({ class: "ranked" }) }),
      h("p", { class: "muted small", id: "effects-legend" },
        "Effect at centre: the change from low to high with the other factors at the centre of their ranges " +
        "(twice the coded coefficient of a numeric factor). Change at optimum: the same with the others at the " +
        "predicted optimum, the number the explanation states. Share of SS: what the model loses without every " +
        "term of the factor; an interaction counts for each of its factors, so the shares overlap and need not " +
        "add up to 100 %.")),
    h("section", { class: "card", id: "anova" },
      h("h3", {}, "ANOVA (type II)"),
      table([
        { label: "source", value: (r) => r.source },
        { label: "df", value: (r) => r.df, class: "num" },
        { label: "sum of squares", value: (r) => num(r.sum_sq), class: "num" },
        { label: "mean square", value: (r) => num(r.mean_sq), class: "num" },
        { label: "F", value: (r) => num(r.f), class: "num" },
        { label: "p", value: (r) => pValue(r.p_value), class: "num" },
        { label: "%", value: (r) => percent(r.percent), class: "num" },
      ], analysis.anova),
      h("p", { class: "muted small" },
        "Type II (partial) sums of squares. On a design that is not orthogonal they need not add up to the " +
        "model's: the row Shared holds the part no single term accounts for on its own (the terms are " +
        "correlated in these runs), so the terms, Shared and Residual add up to 100 %.")),
    h("details", { class: "card" },
      h("summary", {}, "Coefficients (coded units)"),
      table([
        { label: "term", value: (t) => t.name },
        { label: "coefficient", value: (t) => num(t.coefficient), class: "num" },
        { label: "SE", value: (t) => num(t.std_error), class: "num" },
        { label: "t", value: (t) => num(t.t, 3), class: "num" },
        { label: "p", value: (t) => pValue(t.p_value), class: "num" },
        { label: "95 % CI", value: (t) => interval(t.ci_low, t.ci_high), class: "num" },
      ], analysis.terms)));
}

export function renderEffects(root, analysis, experiment) {
  const factors = Object.fromEntries(experiment.factors.map((f) => [f.name, f]));
  const profiles = h("div", { class: "plot", id: "effects-main" });
  const bars = h("div", { class: "plot", id: "effects-pareto" });
  fill(root,
    h("h3", {}, `Main effects on ${analysis.response}: each factor with the others at the optimum (★)`),
    profiles,
    h("h3", {}, "Factors ranked by their share of the sum of squares (dark: p < 0.05)"),
    bars);
  mainEffects(profiles, analysis, factors, analysis.response);
  pareto(bars, analysis);
  return [profiles, bars];
}
