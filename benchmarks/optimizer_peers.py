"""The optimizer benchmark's strongest peers, each behind the contract of `optimizer_history`.

- `gp`: Optuna's GPSampler (Matern-5/2 GP, logEI; constraints through `constraints_func`).
- `smac`: SMAC3's hyperparameter-optimization facade (random forest, log EI, Sobol initial
  design, the intensifier racing repeated configurations when the problem is noisy).
- `hebo`: HEBO (GP with input and output warping, the MACE acquisition ensemble, NSGA-II).
- `ax`: Ax's `Client` with its default generation strategy (centre, Sobol, then BoTorch).

Each adapter is `Cls(problem, seed)`, asks one configuration per call, and tells its library
every trial of the history it has not told yet. How each library hears of a failed trial
(value None) and of a constraint violation:

| peer | failed trial | constrained response |
|---|---|---|
| gp | TrialState.FAIL | native: `constraints_func`, the excess over the limit (a user attr) |
| smac | StatusType.CRASHED, SMAC's crash cost (inf) | penalty: infeasible is told as crashed |
| hebo | observed as NaN, which HEBO drops | penalty: the worst feasible cost so far |
| ax | `mark_trial_failed` | native: outcome constraints `constrained <= max`, `>= min` |

SMAC 2.4.1's random forest rejects the infinite cost of a crash; SMAC3 PR #1312 (merged after
2.4.1, not yet released) imputes the largest successful cost there, and `Smac` does the same
through its runhistory encoder, so the model sees crashed and infeasible trials as the worst
seen while the intensifier never makes them the incumbent. HEBO has no constraint in its
`HEBO` optimizer (its `GeneralBO` is a different algorithm): after every observation an
infeasible trial's cost is re-set to the largest feasible cost observed, so it is never HEBO's
best while a feasible trial exists. On a noise-free problem gp, smac and ax are told so
(Optuna's `deterministic_objective`, SMAC's `deterministic`, a standard error of 0 for Ax);
HEBO has no such setting.

Seeds: Optuna, SMAC and Ax take one. HEBO draws from Python's, numpy's and torch's global
generators and runs pymoo's NSGA-II unseeded, so each of its suggestions runs with those seeded
from (seed, trial index), and they are restored after. SMAC's facade is built at the first
`ask`, whose `budget_left` is the race's budget: SMAC sizes its initial design by `n_trials`
(10 per factor, at most a quarter of the trials).

`recommend` is what the library names best: Optuna's `study.best_trial` (feasible trials
only), SMAC's incumbent, HEBO's `best_x` (best observed; HEBO offers no model-based best), and
Ax's `get_best_parameterization` (the best predicted arm among those tried, by the model
fitted when Ax last asked, so it may not know the latest trial; the raw best when the model
cross-validates badly). It is None until a successful trial that meets the constraint exists.
Ax's call cross-validates its model: about 1 s at 60 trials, where the others take no time.

Numeric factors with explicit levels are searched as an ordered index over the levels, the
same for every peer; categorical factors as unordered choices.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import io
import math
import random
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from experiments.factors import Config, FactorSpace, Value

try:
    from benchmarks.optimizer_history import History
    from benchmarks.optimizer_problems import Problem
except ModuleNotFoundError:  # run as `python benchmarks/optimizer.py`: this folder is on the path
    from optimizer_history import History  # type: ignore[no-redef]
    from optimizer_problems import Problem  # type: ignore[no-redef]

# The modules each adapter imports: a peer whose modules fail to import cannot run.
PEER_MODULES: dict[str, tuple[str, ...]] = {
    "gp": ("torch", "optuna"),
    "smac": ("smac",),
    "hebo": ("hebo.optimizers.hebo",),
    "ax": ("ax.api.client",),
}
INSTALL = "pip install -e '.[peers]'"
# Every HEBO release on PyPI fails beside numpy 2 through pip's resolver: 0.3.5 and 0.3.6 pin
# numpy<1.25 (and 0.3.6 pymoo==0.6.0); 0.3.0-0.3.2 pin nothing but call DataFrame.append and
# pymoo.factory, gone in pandas 2 and pymoo 0.6. 0.3.6's code runs on numpy 2.4, pandas 3.1 and
# the pymoo 0.6.2 that Ax brings, so it can be added by hand without its declared dependencies.
HEBO_INSTALL = (
    "HEBO is not in the peers extra (it pins numpy<1.25); after pip install -e '.[peers]': "
    "pip install --no-deps HEBO==0.3.6 && pip install GPy==1.15.0 disjoint-set"
)
OBJECTIVE = "value"
CONSTRAINED = "constrained"


@dataclass(frozen=True)
class Dimension:
    """One factor as the peers' spaces see it: "int" (an integer, or the index of a numeric
    factor's levels), "float", or "choice" (a categorical factor, offered as level labels)."""

    name: str
    kind: str
    low: float
    high: float
    log: bool
    levels: tuple[Value, ...] = ()

    @property
    def labels(self) -> list[str]:
        """The choices as strings, which every library accepts."""
        return [str(level) for level in self.levels]

    def value(self, raw: Any) -> Value:
        """A library's value -> the factor's value, typed and inside the factor's region."""
        if self.kind == "choice":
            return self.levels[self.labels.index(str(raw))]
        if self.kind == "float":
            return min(max(float(raw), self.low), self.high)
        index = min(max(math.floor(float(raw) + 0.5), int(self.low)), int(self.high))
        return self.levels[index] if self.levels else index


def dimensions(space: FactorSpace) -> list[Dimension]:
    """The space's factors as dimensions, in factor order."""
    found = []
    for f in space.factors:
        if f.kind == "categorical":
            assert f.levels is not None
            found.append(Dimension(f.name, "choice", 0, len(f.levels) - 1, False, f.levels))
        elif f.levels is not None:
            levels = tuple(sorted(f.levels, key=float))
            found.append(Dimension(f.name, "int", 0, len(levels) - 1, False, levels))
        else:
            low, high = f.bounds
            kind = "int" if f.kind == "integer" else "float"
            found.append(Dimension(f.name, kind, low, high, f.scale == "log2"))
    return found


def to_config(dims: Sequence[Dimension], raw: Mapping[str, Any]) -> Config:
    """A library's parameters -> a configuration of the factor space."""
    return {d.name: d.value(raw[d.name]) for d in dims}


def missing_peers(*, load: bool = True) -> dict[str, str]:
    """For each peer whose library cannot be imported here, why (the ImportError's message) and
    how to install it. With `load=False` only the top-level packages are looked up, which costs
    nothing (importing Ax and torch takes seconds), but a broken install then passes."""
    missing = {}
    for name, modules in PEER_MODULES.items():
        for module in modules:
            try:
                if load:
                    importlib.import_module(module)
                elif importlib.util.find_spec(module.split(".")[0]) is None:
                    raise ModuleNotFoundError(f"No module named '{module.split('.')[0]}'")
            except ImportError as error:
                missing[name] = f"{error}; {HEBO_INSTALL if name == 'hebo' else INSTALL}"
                break
    return missing


class Peer:
    """What every adapter shares: which history trials its library has been told, by the
    library's own handle for each trial it proposed."""

    name: ClassVar[str]

    def __init__(self, problem: Problem, seed: int) -> None:
        self.problem = problem
        self.seed = seed
        self.dims = dimensions(problem.space)
        self.stop_reason: str | None = None
        self._asked: dict[int, Any] = {}  # history index -> the library's handle
        self._told = 0

    def ask(self, history: History, budget_left: int) -> list[tuple[Config, str]]:
        """Tell the library the new results, then take its next configuration."""
        self._tell_new(history)
        config, handle = self._suggest(len(history), budget_left)
        self._asked[len(history)] = handle
        return [(config, self.name)]

    def recommend(self, history: History) -> Config | None:
        """The library's own best configuration, once a usable trial exists."""
        self._tell_new(history)
        if not any(self._usable(history, i) for i in range(len(history))):
            return None
        return self._best()

    def _usable(self, history: History, i: int) -> bool:
        if history.values[i] is None:
            return False
        return self.problem.meets_limit(_constrained(history, i))

    def _tell_new(self, history: History) -> None:
        for i in range(self._told, len(history)):
            if i not in self._asked:
                raise ValueError(f"trial {i} was not proposed by {self.name}: it cannot tell it")
            self._tell(self._asked.pop(i), history.values[i], _constrained(history, i))
        self._told = len(history)

    def _cost(self, value: float) -> float:
        """The value as a cost, for the libraries that only minimize."""
        return value if self.problem.goal == "minimize" else -value

    def _suggest(self, index: int, budget_left: int) -> tuple[Config, Any]:
        raise NotImplementedError

    def _tell(self, handle: Any, value: float | None, constrained: float | None) -> None:
        raise NotImplementedError

    def _best(self) -> Config | None:
        raise NotImplementedError


def _constrained(history: History, i: int) -> float | None:
    return history.constrained[i] if i < len(history.constrained) else None


class OptunaPeer(Peer):
    """An Optuna sampler in an ask/tell loop; the limit goes to its `constraints_func`."""

    def __init__(self, problem: Problem, seed: int) -> None:
        super().__init__(problem, seed)
        import optuna

        self.optuna = optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)  # else one line per trial
        constraints = None
        if problem.limit is not None:

            def constraints(trial: optuna.trial.FrozenTrial) -> list[float]:
                return [problem.excess(trial.user_attrs[CONSTRAINED])]

        with warnings.catch_warnings():
            # Multivariate TPE, GPSampler and constraints_func are flagged experimental.
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = self._sampler(seed, constraints)
        self.study = optuna.create_study(direction=problem.goal, sampler=sampler)

    def _sampler(self, seed: int, constraints: Any) -> Any:
        raise NotImplementedError

    def _suggest(self, index: int, budget_left: int) -> tuple[Config, Any]:
        trial = self.study.ask()
        raw: dict[str, Any] = {}
        for d in self.dims:
            if d.kind == "choice":
                raw[d.name] = trial.suggest_categorical(d.name, d.labels)
            elif d.kind == "int":
                raw[d.name] = trial.suggest_int(d.name, int(d.low), int(d.high), log=d.log)
            else:
                raw[d.name] = trial.suggest_float(d.name, d.low, d.high, log=d.log)
        return to_config(self.dims, raw), trial

    def _tell(self, handle: Any, value: float | None, constrained: float | None) -> None:
        if value is None:
            self.study.tell(handle, state=self.optuna.trial.TrialState.FAIL)
            return
        if constrained is not None:
            handle.set_user_attr(CONSTRAINED, constrained)
        self.study.tell(handle, value)

    def _best(self) -> Config | None:
        try:
            best = self.study.best_trial
        except ValueError:  # no complete trial, or none feasible
            return None
        return to_config(self.dims, best.params)


class Tpe(OptunaPeer):
    """Optuna's multivariate TPE (a baseline: Optuna is a dev dependency, no torch needed)."""

    name = "tpe"

    def _sampler(self, seed: int, constraints: Any) -> Any:
        return self.optuna.samplers.TPESampler(
            multivariate=True, seed=seed, constraints_func=constraints
        )


class GpSampler(OptunaPeer):
    """Optuna's GPSampler."""

    name = "gp"

    def __init__(self, problem: Problem, seed: int, *, startup_trials: int = 10) -> None:
        import torch  # noqa: F401  (GPSampler imports it only when it first fits)

        self.startup_trials = startup_trials
        super().__init__(problem, seed)

    def _sampler(self, seed: int, constraints: Any) -> Any:
        return self.optuna.samplers.GPSampler(
            seed=seed,
            n_startup_trials=self.startup_trials,
            deterministic_objective=self.problem.noise == 0,
            constraints_func=constraints,
        )


class Smac(Peer):
    """SMAC3's HyperparameterOptimizationFacade in an ask/tell loop. The facade is built at the
    first `ask`, when the race's budget is known: SMAC sizes its initial design by `n_trials`."""

    name = "smac"

    def __init__(self, problem: Problem, seed: int, *, initial_configs: int | None = None) -> None:
        super().__init__(problem, seed)
        import smac

        self.smac = smac
        self.initial_configs = initial_configs
        self.facade: smac.HyperparameterOptimizationFacade | None = None
        self._output = tempfile.TemporaryDirectory(prefix="smac-")  # never written: save=False

    def _build(self, n_trials: int) -> Any:
        from ConfigSpace import Categorical, ConfigurationSpace, Float, Integer

        smac = self.smac
        space = ConfigurationSpace(seed=self.seed)
        for d in self.dims:
            if d.kind == "choice":
                space.add(Categorical(d.name, d.labels))
            elif d.kind == "int":
                space.add(Integer(d.name, (int(d.low), int(d.high)), log=d.log))
            else:
                space.add(Float(d.name, (d.low, d.high), log=d.log))
        scenario = smac.Scenario(
            space,
            deterministic=self.problem.noise == 0,  # noisy: the intensifier repeats configs
            n_trials=n_trials,
            seed=self.seed,
            output_directory=self._output.name,
        )
        facade = smac.HyperparameterOptimizationFacade
        return facade(
            scenario,
            initial_design=facade.get_initial_design(scenario, n_configs=self.initial_configs),
            runhistory_encoder=_finite_cost_encoder(scenario),
            logging_level=False,
            overwrite=True,
        )

    def _suggest(self, index: int, budget_left: int) -> tuple[Config, Any]:
        if self.facade is None:
            self.facade = self._build(index + budget_left)
        info = self.facade.ask()
        return to_config(self.dims, dict(info.config)), info

    def _tell(self, handle: Any, value: float | None, constrained: float | None) -> None:
        from smac.runhistory.dataclasses import TrialValue
        from smac.runhistory.enumerations import StatusType

        assert self.facade is not None
        if value is None or not self.problem.meets_limit(constrained):
            result = TrialValue(cost=math.inf, status=StatusType.CRASHED)
        else:
            result = TrialValue(cost=self._cost(value))
        self.facade.tell(handle, result, save=False)

    def _best(self) -> Config | None:
        assert self.facade is not None
        incumbent = self.facade.intensifier.get_incumbent()
        # Before any successful trial the first (crashed) configuration is the incumbent.
        if incumbent is None or not math.isfinite(self.facade.runhistory.get_cost(incumbent)):
            return None
        return to_config(self.dims, dict(incumbent))


def _finite_cost_encoder(scenario: Any) -> Any:
    """The HPO facade's log-scaled runhistory encoder with SMAC3 PR #1312's imputation: a
    non-finite cost (a crash) becomes the largest successful cost seen, so the random forest
    can be fitted (SMAC 2.4.1 hands it inf and the fit raises)."""
    from smac.runhistory.encoder import RunHistoryLogScaledEncoder

    class FiniteCostEncoder(RunHistoryLogScaledEncoder):
        def _build_matrix(
            self, trials: Mapping[Any, Any], store_statistics: bool = False
        ) -> tuple[np.ndarray, np.ndarray]:
            worst = self.runhistory.objective_bounds[0][1]
            worst = worst if math.isfinite(worst) else 0.0  # no successful trial yet
            imputed = {
                key: run if math.isfinite(run.cost) else dataclasses.replace(run, cost=worst)
                for key, run in trials.items()
            }
            return super()._build_matrix(imputed, store_statistics)

    return FiniteCostEncoder(scenario)


class Hebo(Peer):
    """HEBO's `HEBO` optimizer, one suggestion at a time."""

    name = "hebo"

    def __init__(self, problem: Problem, seed: int, *, initial: int | None = None) -> None:
        super().__init__(problem, seed)
        with contextlib.redirect_stdout(io.StringIO()):  # pymoo's hint about compiled modules
            from hebo.acq_optimizers import evolution_optimizer
            from hebo.design_space.design_space import DesignSpace
            from hebo.optimizers.hebo import HEBO

        self.evolution = evolution_optimizer
        space = DesignSpace().parse([_hebo_parameter(d) for d in self.dims])
        # rand_sample: HEBO's own default (1 + dimensions) unless a test asks for fewer.
        self.opt = HEBO(space, rand_sample=initial, scramble_seed=seed)
        self._rows: list[tuple[float, bool]] = []  # (cost, feasible) of each row HEBO keeps

    def _suggest(self, index: int, budget_left: int) -> tuple[Config, Any]:
        # HEBO draws from the global generators: seed them per suggestion.
        seed = int(np.random.SeedSequence([self.seed, index]).generate_state(1)[0])
        with (
            _seeded_globals(seed),
            _seeded_minimize(self.evolution),
            contextlib.redirect_stdout(io.StringIO()),  # HEBO's GP prints Cholesky retries
        ):
            suggestion = self.opt.suggest(n_suggestions=1)
        return to_config(self.dims, suggestion.iloc[0].to_dict()), suggestion

    def _tell(self, handle: Any, value: float | None, constrained: float | None) -> None:
        if value is None:
            self.opt.observe(handle, np.array([[np.nan]]))  # HEBO drops non-finite rows
            return
        feasible = self.problem.meets_limit(constrained)
        self._rows.append((self._cost(value), feasible))
        self.opt.observe(handle, np.array([[self._cost(value)]]))
        self._penalize()

    def _penalize(self) -> None:
        """An infeasible row's cost is the largest feasible cost so far (the largest cost when
        none is feasible), so HEBO never ranks it above a feasible one."""
        if all(feasible for _, feasible in self._rows):
            return
        costs = np.array([cost for cost, _ in self._rows])
        feasible = np.array([f for _, f in self._rows])
        penalty = costs[feasible].max() if feasible.any() else costs.max()
        self.opt.y[:, 0] = np.where(feasible, costs, penalty)

    def _best(self) -> Config | None:
        return to_config(self.dims, self.opt.best_x.iloc[0].to_dict())


def _hebo_parameter(d: Dimension) -> dict[str, Any]:
    if d.kind == "choice":
        return {"name": d.name, "type": "cat", "categories": d.labels}
    # HEBO's pow_int and pow are searched on log(x).
    kind = {("int", False): "int", ("int", True): "pow_int", ("float", False): "num"}
    return {"name": d.name, "type": kind.get((d.kind, d.log), "pow"), "lb": d.low, "ub": d.high}


@contextlib.contextmanager
def _seeded_globals(seed: int) -> Iterator[None]:
    """Python's, numpy's and torch's global generators seeded for one call, then restored."""
    import torch

    states = random.getstate(), np.random.get_state(), torch.random.get_rng_state()
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    try:
        yield
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.random.set_rng_state(states[2])


@contextlib.contextmanager
def _seeded_minimize(module: Any) -> Iterator[None]:
    """HEBO runs NSGA-II through pymoo's `minimize` without a seed, and pymoo 0.6.2 (the one Ax
    brings) then seeds it from fresh entropy: hand it a seed from numpy's (seeded) generator."""
    minimize = module.minimize

    def seeded(*args: Any, **kwargs: Any) -> Any:
        return minimize(*args, seed=int(np.random.randint(2**31 - 1)), **kwargs)

    module.minimize = seeded
    try:
        yield
    finally:
        module.minimize = minimize


class AxBotorch(Peer):
    """Ax's `Client` (Ax >= 1.0) with its default generation strategy: the centre point, Sobol,
    then BoTorch ("fast": its default surrogate, with Ax's mixed-integer handling)."""

    name = "ax"

    def __init__(self, problem: Problem, seed: int, *, initial: int | None = None) -> None:
        super().__init__(problem, seed)
        import logging

        from ax.api.client import Client
        from ax.api.configs import ChoiceParameterConfig, RangeParameterConfig
        from ax.exceptions.core import UnsupportedError
        from ax.utils.common.logger import set_stderr_log_level

        self.no_best = (AssertionError, UnsupportedError)  # Ax's "nothing qualifies"
        set_stderr_log_level(logging.ERROR)  # else lines for every trial and model-fit notes
        parameters: list[Any] = []
        for d in self.dims:
            if d.kind == "choice":
                parameters.append(ChoiceParameterConfig(d.name, d.labels, "str", is_ordered=False))
            else:
                kind = "int" if d.kind == "int" else "float"
                bounds = (int(d.low), int(d.high)) if kind == "int" else (d.low, d.high)
                scaling = "log" if d.log else "linear"
                parameters.append(RangeParameterConfig(d.name, bounds, kind, scaling=scaling))
        self.client = Client(random_seed=seed)
        self.client.configure_experiment(parameters=parameters)
        constraints = None
        if problem.limit is not None:
            bounds = ((">=", problem.limit.min), ("<=", problem.limit.max))
            constraints = [f"{CONSTRAINED} {op} {b!r}" for op, b in bounds if b is not None]
        objective = OBJECTIVE if problem.goal == "maximize" else f"-{OBJECTIVE}"
        self.client.configure_optimization(objective, outcome_constraints=constraints)
        self.client.configure_generation_strategy(
            initialization_budget=initial, initialization_random_seed=seed
        )

    def _suggest(self, index: int, budget_left: int) -> tuple[Config, Any]:
        ((trial, parameters),) = self.client.get_next_trials(max_trials=1).items()
        return to_config(self.dims, parameters), trial

    def _tell(self, handle: Any, value: float | None, constrained: float | None) -> None:
        if value is None:
            self.client.mark_trial_failed(handle, failed_reason="the trial failed")
            return
        # A standard error of 0 tells Ax the objective is noise-free; None lets it infer noise.
        data: dict[str, Any] = {OBJECTIVE: (value, 0.0) if self.problem.noise == 0 else value}
        if constrained is not None:
            data[CONSTRAINED] = constrained
        self.client.complete_trial(handle, raw_data=data)

    def _best(self) -> Config | None:
        try:
            parameters, _, _, _ = self.client.get_best_parameterization()
        except self.no_best:
            return None
        return to_config(self.dims, parameters)


PEERS: dict[str, type[Peer]] = {"gp": GpSampler, "smac": Smac, "hebo": Hebo, "ax": AxBotorch}
