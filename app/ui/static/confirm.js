// The confirmation on the cluster, at the top of an experiment: the latest one's sentence to
// paste (the gain with its 95 % interval and paired p), its pairs as they run, the baseline it
// compares with, and the button that starts one. What the API refuses is shown as it answered.

import { api } from "./api.js";
import { configText, errorBox, fill, h } from "./dom.js";

const FINAL = new Set(["succeeded", "failed", "cancelled"]);

export function confirmPanel(ctx) {
  const summary = h("div", { id: "confirmation-summary" });
  const baseline = h("p", { id: "baseline", class: "muted small" });
  const answer = h("div", { id: "confirm-result", class: "result" });
  const button = h("button", { type: "button", id: "confirm", onclick: confirm },
    "Confirm against today's");
  const node = h("section", { class: "card", id: "confirmation" },
    h("h3", {}, "Better than today's?"), summary, baseline, h("div", { class: "row" }, button), answer);

  async function confirm() {
    fill(answer, h("span", { class: "muted" }, "…"));
    try {
      const started = await api(`/experiments/${ctx.id}/confirm`, { method: "POST", body: {} });
      fill(answer, h("p", { class: "ok" }, `confirmation ${started.id}: ${started.pairs} pairs queued`),
        h("p", { class: "muted small" }, started.plan.reason || ""));
    } catch (error) {
      fill(answer, errorBox(error));
    }
    ctx.refresh();
  }

  function latestText(latest) {
    if (latest.sentence) return h("p", { class: "big", id: "confirmation-sentence" }, latest.sentence);
    const ended = latest.trials.filter((t) => FINAL.has(t.status)).length;
    if (latest.status === "running") {
      return h("p", { id: "confirmation-running" },
        `Confirmation ${latest.id} running: ${ended} of ${latest.trials.length} runs ended`);
    }
    return h("p", { class: "warning" }, `Confirmation ${latest.id} ${latest.status}: ${latest.error || ""}`);
  }

  function update(experiment, confirmations) {
    const base = experiment.baseline;
    button.disabled = !base;
    button.title = base ? "run the configuration to deploy against today's in interleaved pairs"
      : "the experiment names no baseline (today's configuration)";
    fill(baseline, base ? `Today's configuration: ${base.config ? configText(base.config)
      : `${configText(base.given)}, ${base.current.join(", ")} read from the nodes at its first run`}`
      : "No baseline named: create the experiment with baseline to compare with today's configuration.");
    fill(summary, confirmations.length ? latestText(confirmations[0])
      : h("p", { class: "muted" }, "Not confirmed on the cluster yet."));
  }

  return { node, update };
}
