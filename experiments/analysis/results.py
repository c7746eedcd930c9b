"""What an analysis reports: the fitted terms, the factors ranked by effect, the optimum and
the responses it honours, as plain values with a JSON form and a text summary."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace

from experiments.analysis.coverage import Coverage
from experiments.analysis.deploy import DeployAnswer
from experiments.analysis.diagnostics import BoxCox, Diagnostics
from experiments.analysis.explain import Explanation
from experiments.analysis.screening import Curvature, Lenth
from experiments.analysis.selection import Selection
from experiments.analysis.split_plot import SplitPlotFit
from experiments.analysis.statistics import AnovaRow, FitStatistics, LackOfFit
from experiments.analysis.steepest import SteepestPath
from experiments.analysis.surface import Canonical
from experiments.factors import Config, Value
from experiments.numbers import format_optional


@dataclass(frozen=True)
class ResponseGoal:
    """One response of a Derringer-Suich desirability objective, with its measurements."""

    response: str
    values: Sequence[float]
    goal: str
    low: float
    high: float
    target: float | None = None
    weight: float = 1.0
    importance: float = 1.0


@dataclass(frozen=True)
class ResponseLimit:
    """A limit on another response at the optimum; `values` are its measurements, one per
    observed configuration, modelled like the objective's response."""

    response: str
    values: Sequence[float]
    min: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class Term:
    """One model term, in coded units; None where a statistic is undefined."""

    name: str
    coefficient: float
    std_error: float | None
    t: float | None
    p_value: float | None
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class Profile:
    """The predicted response along one factor with every other factor at the optimum.

    `settings` run over the factor's range (every whole number of a small integer range, else
    21 evenly spaced coded steps) or its levels; `best` is the setting of the best prediction
    by the analysis goal.
    """

    settings: list[Value]
    predicted: list[float]
    best: Value


@dataclass(frozen=True)
class FactorEffect:
    """How much one factor matters.

    `effect` is the predicted change from `low` to `high` with the other factors at the centre
    of their ranges, categorical ones averaged over their levels (the textbook effect: for a
    numeric factor without interactions with categorical ones, twice its coded coefficient,
    as its square is the same at both ends and the other numeric factors are 0);
    `change_at_optimum` is the same change with the others at the predicted optimum, the
    number the explanation states for a slope. The two differ by the factor's interactions.
    For a numeric factor `low` and `high` are the ends of its range; for a categorical factor
    the two levels whose predictions differ most (in level order). `share_of_ss` is the percent
    of the total sum of squares the model loses without every term that contains the factor
    (the sum of squares of its joint test), the ranking key: an interaction counts for each of
    its factors, so the shares overlap and need not add up to 100. The p-value tests every term
    that contains the factor at once; `direction` ("increases", "decreases" or "none") is that
    of the change at the optimum. `profile` is the whole predicted curve at the optimum, which
    tells a peak inside the range from a slope. `in_model` is false when model selection
    dropped every term of the factor, or the runs cannot estimate any: nothing was estimated or
    tested (the effect is 0, the p-value None). `settings_run` counts the factor's distinct
    settings in the runs: at 1 it never varied, and its setting in the optimum is the one run,
    not a choice; otherwise a factor not in the model may take any setting.
    """

    factor: str
    in_model: bool
    settings_run: int
    effect: float
    change_at_optimum: float
    share_of_ss: float | None
    p_value: float | None
    direction: str
    low: Value
    high: Value
    profile: Profile


@dataclass(frozen=True)
class RobustLevel:
    """The control optimum at one noise scenario (the noise factors' values): the predicted
    mean with its 95 % confidence and prediction intervals."""

    scenario: Config
    predicted: float
    ci_low: float | None
    ci_high: float | None
    pi_low: float | None
    pi_high: float | None


@dataclass(frozen=True)
class RobustOptimum:
    """How the control optimum fares across the noise factors' levels.

    `aim` says what was optimized (`experiments.robust.RobustAim.text`), `aim_value` its value
    (the response's, or the overall desirability's for a desirability objective); `levels` has
    one entry per noise scenario and `sd_across_levels` is the standard deviation of their
    predictions (over the equally weighted scenarios: with a numeric noise factor at its coded
    -1 and +1 it is |dy/dz|, the square root of MMA's variance model without the residual
    variance). `held` is where the factor profiles and the steepest path hold the noise
    factors: the scenario that attains the aim; for the mean, the scenario whose prediction is
    nearest the mean with each numeric noise factor without explicit levels at the centre of
    its range instead (MMA's mean model, for a model without a square of it).
    """

    aim: str
    aim_value: float
    levels: list[RobustLevel]
    sd_across_levels: float
    held: Config


@dataclass(frozen=True)
class Optimum:
    """The best predicted configuration in the region, with 95 % intervals.

    Integer factors are checked against their ±1 neighbours (`neighbours_checked`), continuous
    factors refined below the grid; `limits_met` gives each limit on another response with that
    response's prediction at the optimum; `desirability` the overall and per-response
    desirabilities when the objective combines responses. `region` says where it was searched:
    the factor ranges, or, when the runs do not fill them (observations taken elsewhere), the
    convex hull of the runs, so the optimum is never an
    extrapolation. `search` is "lattice" when every candidate point was predicted, or
    "coordinate" when the lattice was too large and coordinate-wise searches from each observed
    configuration were taken.

    With noise factors (`experiments.robust`) the optimum is the best configuration of the
    control factors only, judged across the noise levels by the objective's aim (`robust`; see
    `experiments.analysis.robust_optimum`): `config` holds the control factors, `predicted` and
    its intervals are the aim's (the mean over the noise levels, the worst level, or the
    quantile between two levels: a weighted sum of their model rows, its intervals exact),
    and `limits_met` gives each
    limit's least favourable prediction across the levels, where every limit must hold.
    """

    config: Config
    predicted: float
    ci_low: float | None
    ci_high: float | None
    pi_low: float | None
    pi_high: float | None
    on_edge: dict[str, str]  # factor -> the end it sits at, "low" or "high"
    search: str
    region: str
    neighbours_checked: bool
    limits_met: dict[str, float]
    desirability: dict[str, float] | None
    robust: RobustOptimum | None = None

    @property
    def held(self) -> Config:
        """The optimum as one full configuration: with noise factors, the control optimum at
        the noise levels its report holds them at (where slices and effects are read)."""
        return {**self.config, **(self.robust.held if self.robust is not None else {})}


@dataclass(frozen=True)
class Analysis:
    """A fitted model: terms, fit statistics, factors ranked by effect size, and the optimum.

    `model` is the order asked for; `model_label` says which terms were fitted, e.g. "auto
    (selected from the quadratic model by AICc): nodes + threads + threads^2". `optimum` is
    the model's best prediction, which may lie where nothing was run; `deploy` is the one
    configuration to deploy (a measured one, `experiments.analysis.deploy`) and `coverage`
    what the runs cover of the experiment planned. `fit` leaves both None: they need the
    strategy's recommendation and the plan, which `reviewed` adds.
    """

    model: str
    model_label: str
    goal: str
    n_observations: int
    terms: list[Term]
    r_squared: float | None
    adj_r_squared: float | None
    rmse: float | None
    residual_df: int
    ranked_factors: list[FactorEffect]
    optimum: Optimum
    selection: Selection | None
    anova: list[AnovaRow]
    fit: FitStatistics
    lack_of_fit: LackOfFit | None
    curvature: Curvature | None
    lenth: Lenth | None
    diagnostics: Diagnostics
    box_cox: BoxCox | None
    canonical: Canonical | None
    steepest: SteepestPath | None
    natural_terms: list[Term]
    split_plot: SplitPlotFit | None
    method: str
    explanation: Explanation
    deploy: DeployAnswer | None = field(default=None, kw_only=True)
    coverage: Coverage | None = field(default=None, kw_only=True)

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)

    def reviewed(self, coverage: Coverage, deploy: DeployAnswer | None) -> Analysis:
        """The analysis with what to deploy and what its runs cover; the coverage's warnings
        open the explanation."""
        explanation = replace(
            self.explanation, sentences=[*coverage.sentences, *self.explanation.sentences]
        )
        return replace(self, deploy=deploy, coverage=coverage, explanation=explanation)

    def summary(self) -> str:
        """A readable text report: fit statistics, coefficient table, effects, optimum."""
        width = max(len("term"), *(len(t.name) for t in self.terms))
        lines = [
            f"OLS on coded factors: {self.model_label}; {self.n_observations} observations",
            f"R-squared {format_optional(self.r_squared, '.4f')}   adj. R-squared "
            f"{format_optional(self.adj_r_squared, '.4f')}   "
            f"RMSE {format_optional(self.rmse, '.4g')}   residual df {self.residual_df}",
            "",
            f"{'term':<{width}} {'coef':>12} {'std err':>10} {'t':>8} {'P>|t|':>7} "
            f"{'[0.025':>12} {'0.975]':>12}",
        ]
        lines += [
            f"{t.name:<{width}} {t.coefficient:>12.4f} {format_optional(t.std_error, '>10.4f')} "
            f"{format_optional(t.t, '>8.3f')} {format_optional(t.p_value, '>7.3f')} "
            f"{format_optional(t.ci_low, '>12.4f')} {format_optional(t.ci_high, '>12.4f')}"
            for t in self.terms
        ]
        lines += ["", "factors by effect size (others at the centre):"]
        lines += [
            f"  {e.factor}: {e.effect:+.4g} from {e.low} to {e.high} "
            f"(p = {format_optional(e.p_value, '.3g')})"
            for e in self.ranked_factors
        ]
        best = self.optimum
        settings = ", ".join(f"{name}={value}" for name, value in best.config.items())
        lines += [
            "",
            f"optimum ({self.goal}): {settings}",
            f"  predicted {best.predicted:.4g}, 95% CI [{format_optional(best.ci_low, '.4g')}, "
            f"{format_optional(best.ci_high, '.4g')}], "
            f"95% PI [{format_optional(best.pi_low, '.4g')}, "
            f"{format_optional(best.pi_high, '.4g')}]",
        ]
        if best.robust is not None:
            spread = [level.predicted for level in best.robust.levels]
            lines.append(
                f"  for {best.robust.aim}: {best.robust.aim_value:.4g}; across the"
                f" {len(spread)} noise levels {min(spread):.4g} to {max(spread):.4g}"
                f" (sd {best.robust.sd_across_levels:.4g})"
            )
        if best.on_edge:
            ends = ", ".join(f"{name} ({end})" for name, end in best.on_edge.items())
            lines.append(f"  at the edge of the region in: {ends}")
        return "\n".join(lines)
