// Plotly figures of the page: response surfaces (contour and 3-D), effect plots and
// best-so-far curves. Plotly is the copy the API serves from the plotly package (window.Plotly).

import { num } from "./dom.js";

const Plotly = window.Plotly;
export const CONFIG = { displaylogo: false, responsive: true };
const FONT = { family: "system-ui, sans-serif", size: 12 };
const EXTRAPOLATION = "rgba(70, 70, 70, 0.45)";
const INFEASIBLE = "rgba(214, 39, 40, 0.35)";
const ORIGINS = {
  design: { label: "design", color: "#1f77b4" },
  suggestion: { label: "accepted suggestion", color: "#ff7f0e" },
  loop: { label: "closed loop", color: "#2ca02c" },
  observation: { label: "observation", color: "#9467bd" },
  warm_start: { label: "warm start", color: "#8c564b" },
};

export function draw(node, data, layout) {
  return Plotly.react(node, data, { font: FONT, ...layout }, CONFIG);
}

export function purge(node) {
  if (node && node.data) Plotly.purge(node);
}

/** An axis of Plotly for a factor: log for log2 factors, categories by position. */
function axis(factor, values, title) {
  if (factor && factor.kind === "categorical") {
    return { title: { text: title }, tickvals: values.map((_, i) => i), ticktext: values.map(String),
      range: [-0.5, values.length - 0.5] };
  }
  if (factor && factor.scale === "log2") {
    // Ticks at every power of two (dtick is in decades on a log axis).
    return { title: { text: title }, type: "log", dtick: Math.log10(2) };
  }
  return { title: { text: title }, type: "linear" };
}

/** Where a value sits on its axis: a category's position, else the value. */
function place(factor, values, value) {
  if (factor && factor.kind === "categorical") return values.findIndex((v) => String(v) === String(value));
  return value;
}

function label(factor) {
  return factor.unit ? `${factor.name} (${factor.unit})` : factor.name;
}

/** z where the mask holds, null elsewhere (one grid, rows of y). */
function masked(z, mask, keep) {
  return z.map((row, j) => row.map((v, i) => (mask[j][i] === keep ? v : null)));
}

/** Cells next to a cell of the other kind, so two masked surfaces meet without a gap. */
function grown(mask, keep) {
  return mask.map((row, j) => row.map((value, i) => {
    if (value === keep) return keep;
    const near = [[j - 1, i], [j + 1, i], [j, i - 1], [j, i + 1]];
    return near.some(([a, b]) => mask[a] && mask[a][b] === keep) ? keep : value;
  }));
}

/**
 * A two-factor slice as a contour plot: the prediction, extrapolation (no runs nearby) shaded
 * grey, broken constraints shaded red, the runs as circles and the optimum as a star. With a
 * categorical factor on an axis the prediction is a heatmap: nothing lies between two levels.
 */
export function contour(node, slice, factors, optimum, response) {
  const fx = factors[slice.x];
  const fy = factors[slice.y];
  const xs = slice.x_values.map((v) => place(fx, slice.x_values, v));
  const ys = slice.y_values.map((v) => place(fy, slice.y_values, v));
  const discrete = fx.kind === "categorical" || fy.kind === "categorical";
  const shade = (mask, color, name) => (discrete
    ? { type: "heatmap", x: xs, y: ys, name, z: mask.map((row) => row.map((ok) => (ok ? null : 1))),
      colorscale: [[0, color], [1, color]], showscale: false, hoverinfo: "skip" }
    // A constraint contour (z < 0.5 holds where the mask does) shades where it does not, with a
    // smooth edge and inside the grid.
    : { type: "contour", x: xs, y: ys, name, z: mask.map((row) => row.map((ok) => (ok ? 0 : 1))),
      contours: { type: "constraint", operation: "<", value: 0.5 }, fillcolor: color,
      line: { width: 0.5, color: "rgba(0,0,0,0.4)" }, hoverinfo: "skip",
      showlegend: mask.some((row) => row.some((ok) => !ok)) });
  const hover = `${slice.x} %{x}<br>${slice.y} %{y}<br>${response} %{z:.4g}<extra></extra>`;
  const colorbar = { title: { text: response, side: "right" } };
  const data = [
    discrete
      ? { type: "heatmap", x: xs, y: ys, z: slice.predicted, name: response, colorscale: "Viridis",
        colorbar, hovertemplate: hover }
      : { type: "contour", x: xs, y: ys, z: slice.predicted, name: response, colorscale: "Viridis",
        contours: { coloring: "heatmap", showlabels: true, labelfont: { color: "white", size: 11 } },
        colorbar, hovertemplate: hover },
    shade(slice.inside, EXTRAPOLATION, "extrapolation"),
    shade(slice.feasible, INFEASIBLE, "constraint broken"),
    { type: "scatter", mode: "markers", name: "runs",
      x: slice.runs.map((r) => place(fx, slice.x_values, r.x)),
      y: slice.runs.map((r) => place(fy, slice.y_values, r.y)),
      text: slice.runs.map((r) => `${response} ${num(r.value)}`),
      hovertemplate: "run: %{text}<extra></extra>",
      marker: { color: "white", size: 8, line: { color: "black", width: 1.5 } } },
    { type: "scatter", mode: "markers", name: "optimum",
      x: [place(fx, slice.x_values, optimum.config[slice.x])],
      y: [place(fy, slice.y_values, optimum.config[slice.y])],
      text: [`predicted ${num(optimum.predicted)}`],
      hovertemplate: "optimum: %{text}<extra></extra>",
      marker: { symbol: "star", size: 18, color: "#ff3b30", line: { color: "black", width: 1 } } },
  ];
  return draw(node, data, {
    margin: { l: 70, r: 20, t: 10, b: 60 },
    xaxis: axis(fx, slice.x_values, label(fx)),
    yaxis: axis(fy, slice.y_values, label(fy)),
    legend: { orientation: "h", y: -0.18 },
  });
}

/** The same slice as a 3-D surface; the extrapolated part drawn as a grey surface of its own. */
export function surface3d(node, slice, factors, optimum, response) {
  const fx = factors[slice.x];
  const fy = factors[slice.y];
  const xs = slice.x_values.map((v) => place(fx, slice.x_values, v));
  const ys = slice.y_values.map((v) => place(fy, slice.y_values, v));
  const inside = grown(slice.inside, true);
  const outside = grown(slice.inside, false);
  const data = [
    { type: "surface", x: xs, y: ys, z: masked(slice.predicted, inside, true), name: response,
      colorscale: "Viridis", colorbar: { title: { text: response, side: "right" } },
      hovertemplate: `${slice.x} %{x}<br>${slice.y} %{y}<br>${response} %{z:.4g}<extra></extra>` },
    { type: "surface", x: xs, y: ys, z: masked(slice.predicted, outside, false),
      name: "extrapolation", showscale: false, opacity: 0.55,
      colorscale: [[0, "#777"], [1, "#777"]], hovertemplate: "extrapolation<extra></extra>" },
    { type: "scatter3d", mode: "markers", name: "runs",
      x: slice.runs.map((r) => place(fx, slice.x_values, r.x)),
      y: slice.runs.map((r) => place(fy, slice.y_values, r.y)),
      z: slice.runs.map((r) => r.value),
      marker: { size: 4, color: "white", line: { color: "black", width: 1 } } },
    { type: "scatter3d", mode: "markers", name: "optimum",
      x: [place(fx, slice.x_values, optimum.config[slice.x])],
      y: [place(fy, slice.y_values, optimum.config[slice.y])],
      z: [optimum.predicted],
      marker: { size: 7, color: "#ff3b30", symbol: "diamond", line: { color: "black", width: 1 } } },
  ];
  return draw(node, data, {
    margin: { l: 0, r: 0, t: 0, b: 0 },
    scene: {
      xaxis: axis(fx, slice.x_values, label(fx)),
      yaxis: axis(fy, slice.y_values, label(fy)),
      zaxis: { title: { text: response } },
      aspectmode: "cube",
      camera: { eye: { x: 1.75, y: -1.75, z: 1.15 } },
    },
    legend: { orientation: "h", y: 0 },
  });
}

/** A one-factor slice (an experiment of one factor): the line with its 95 % band and the runs. */
export function line(node, slice, factors, optimum, response) {
  const fx = factors[slice.x];
  const xs = slice.x_values.map((v) => place(fx, slice.x_values, v));
  const data = [
    { type: "scatter", mode: "lines", x: xs, y: slice.ci_high[0], line: { width: 0 },
      showlegend: false, hoverinfo: "skip" },
    { type: "scatter", mode: "lines", x: xs, y: slice.ci_low[0], fill: "tonexty",
      fillcolor: "rgba(31,119,180,0.2)", line: { width: 0 }, name: "95 % confidence" },
    { type: "scatter", mode: "lines", x: xs, y: slice.predicted[0], name: "predicted",
      line: { color: "#1f77b4" } },
    { type: "scatter", mode: "markers", name: "runs",
      x: slice.runs.map((r) => place(fx, slice.x_values, r.x)), y: slice.runs.map((r) => r.value),
      marker: { color: "white", size: 8, line: { color: "black", width: 1.5 } } },
    { type: "scatter", mode: "markers", name: "optimum",
      x: [place(fx, slice.x_values, optimum.config[slice.x])], y: [optimum.predicted],
      marker: { symbol: "star", size: 16, color: "#ff3b30", line: { color: "black", width: 1 } } },
  ];
  return draw(node, data, {
    margin: { l: 70, r: 20, t: 10, b: 50 },
    xaxis: axis(fx, slice.x_values, label(fx)),
    yaxis: { title: { text: response } },
  });
}

/**
 * Main effects: each factor's predicted profile with the others at the optimum, side by side
 * on one response scale, the optimum's setting marked.
 */
export function mainEffects(node, analysis, factors, response) {
  const ranked = analysis.ranked_factors;
  const columns = Math.min(ranked.length, 4) || 1;
  const rows = Math.ceil(ranked.length / columns) || 1;
  const data = [];
  const layout = {
    grid: { rows, columns, pattern: "independent", xgap: 0.08, ygap: 0.25 },
    margin: { l: 60, r: 20, t: 30, b: 50 }, showlegend: false, annotations: [],
    height: 260 * rows + 40,
  };
  const all = ranked.flatMap((e) => e.profile.predicted);
  const low = Math.min(...all);
  const high = Math.max(...all);
  const pad = (high - low) * 0.08 || 1;
  ranked.forEach((effect, i) => {
    const factor = factors[effect.factor] || { name: effect.factor };
    const settings = effect.profile.settings;
    const xs = settings.map((v) => place(factor, settings, v));
    const suffix = i === 0 ? "" : String(i + 1);
    data.push({ type: "scatter", mode: factor.kind === "categorical" ? "lines+markers" : "lines",
      x: xs, y: effect.profile.predicted, xaxis: `x${suffix}`, yaxis: `y${suffix}`,
      line: { color: "#1f77b4", width: 2 },
      hovertemplate: `${effect.factor} %{x}<br>${response} %{y:.4g}<extra></extra>` });
    const best = settings.findIndex((v) => String(v) === String(effect.profile.best));
    if (best >= 0) {
      data.push({ type: "scatter", mode: "markers", x: [xs[best]], y: [effect.profile.predicted[best]],
        xaxis: `x${suffix}`, yaxis: `y${suffix}`, hoverinfo: "skip",
        marker: { symbol: "star", size: 13, color: "#ff3b30", line: { color: "black", width: 1 } } });
    }
    layout[`xaxis${suffix}`] = { ...axis(factor, settings, label(factor)), automargin: true };
    layout[`yaxis${suffix}`] = { range: [low - pad, high + pad],
      title: { text: i % columns === 0 ? response : "" } };
  });
  return draw(node, data, layout);
}

/** The ranked factors as bars: share of the sum of squares, significant ones darker. */
export function pareto(node, analysis) {
  const ranked = [...analysis.ranked_factors].reverse();
  const data = [{
    type: "bar", orientation: "h",
    y: ranked.map((e) => e.factor),
    x: ranked.map((e) => e.share_of_ss ?? 0),
    text: ranked.map((e) => (!e.in_model ? "not in the model"
      : `${num(e.effect)} low→high · p ${e.p_value === null ? "–" : num(e.p_value, 2)}`)),
    textposition: "outside", cliponaxis: false,
    marker: { color: ranked.map((e) => (e.p_value !== null && e.p_value < 0.05 ? "#1f77b4" : "#aec7e8")) },
    hovertemplate: "%{y}: %{x:.1f} % of the sum of squares<extra></extra>",
  }];
  return draw(node, data, {
    margin: { l: 140, r: 20, t: 10, b: 45 },
    // Room on the right for the labels written beside the bars.
    xaxis: { title: { text: "% of the total sum of squares" },
      range: [0, Math.max(1, ...ranked.map((e) => e.share_of_ss ?? 0)) * 1.45] },
    height: 60 + 38 * ranked.length,
  });
}

/**
 * Each finished trial's value in the order they finished, coloured by where it came from,
 * and the best so far as a step line.
 */
export function bestSoFar(node, series, response, goal) {
  const data = [];
  for (const [origin, style] of Object.entries(ORIGINS)) {
    const points = series.filter((p) => p.origin === origin);
    if (!points.length) continue;
    data.push({ type: "scatter", mode: "markers", name: style.label,
      x: points.map((p) => p.n), y: points.map((p) => p.value),
      text: points.map((p) => `trial ${p.trial}`),
      hovertemplate: `%{text}: ${response} %{y:.4g}<extra></extra>`,
      marker: { color: style.color, size: 8 } });
  }
  data.push({ type: "scatter", mode: "lines", name: "best so far", line: { shape: "hv", color: "black" },
    x: series.map((p) => p.n), y: series.map((p) => p.best) });
  return draw(node, data, {
    margin: { l: 70, r: 20, t: 10, b: 50 },
    xaxis: { title: { text: "trials finished" }, dtick: series.length > 30 ? undefined : 1 },
    yaxis: { title: { text: `${response} (${goal})` } },
    legend: { orientation: "h", y: -0.2 },
  });
}

/** Several experiments' best-so-far curves on one response, one colour each. */
export function compareCurves(node, curves, response, goal) {
  const data = curves.map((c) => ({
    type: "scatter", mode: "lines+markers", name: c.name, line: { shape: "hv" },
    x: c.series.map((p) => p.n), y: c.series.map((p) => p.best),
  }));
  return draw(node, data, {
    margin: { l: 70, r: 20, t: 10, b: 50 },
    xaxis: { title: { text: "trials finished" } },
    yaxis: { title: { text: `best ${response} so far (${goal})` } },
    legend: { orientation: "h", y: -0.2 },
  });
}

/** Every measured value of each experiment, as a box with its points. */
export function compareBoxes(node, curves, response) {
  const data = curves.map((c) => ({
    type: "box", name: c.name, y: c.series.map((p) => p.value), boxpoints: "all", jitter: 0.3,
    pointpos: 0,
  }));
  return draw(node, data, {
    margin: { l: 70, r: 20, t: 10, b: 60 }, showlegend: false,
    yaxis: { title: { text: response } },
  });
}

/**
 * Finished trials with a value of `response`, in the order they finished, each with the best
 * so far: [{n, trial, value, best, origin}]. `loopTrials` are the closed loop's trial ids.
 */
export function seriesOf(trials, response, goal, loopTrials = new Set()) {
  const finished = trials
    .filter((t) => t.status === "succeeded" && t.responses && response in t.responses)
    .sort((a, b) => String(a.finished_at).localeCompare(String(b.finished_at)) || a.id - b.id);
  let best = null;
  return finished.map((t, i) => {
    const value = t.responses[response];
    best = best === null ? value : goal === "minimize" ? Math.min(best, value) : Math.max(best, value);
    const origin = loopTrials.has(t.id) ? "loop" : t.source;
    return { n: i + 1, trial: t.id, value, best, origin };
  });
}
