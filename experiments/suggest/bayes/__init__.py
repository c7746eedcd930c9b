"""Bayesian optimization: expected improvement on a Gaussian process of the coded factors.

The surrogate is `experiments.suggest.gaussian_process`. The next configuration maximizes
expected improvement (EI) over the incumbent, for a minimized response on the negated values.
The incumbent is the best *predicted* mean at an observed configuration, not the best
measurement, so one lucky noisy run does not make every honest candidate look hopeless (the
"plug-in" EI for noisy observations, Picheny et al. 2013).

One idea per module:

- `models`: the Gaussian processes fitted to the runs, the judge (the runs as measured: the
  recommendation and every figure a user reads) and the search (through the output warp, or of
  the logarithm on a log scale: it chooses the next configuration); a failed configuration
  enters them as the worst result so far;
- `limits`: a model per limited response; EI is multiplied by the probability that every limit
  is met, and the recommendation is held to the limits with one standard deviation to spare;
- `incumbent`: the configuration run that the judge puts best, by its mean or by its mean less
  one standard deviation (the recommendation);
- `candidates`: the lattice of candidates and its search;
- `rules`: what may lead a batch instead of the point of highest EI (a replicate of an uncertain
  incumbent, a challenge, a full-length run, the knowledge gradient near a budget's end, a
  space-filling pick when the model sees mostly noise);
- `batch`: the kriging believer;
- `reasons`: the sentences a user reads;
- `optimize`: the entry point, a batch from the fitted models;
- `robust_search` and `robust_deploy`: with noise factors, the search scores control
  configurations by the expected improvement of the robust aim across the noise levels, and the
  recommendation is the control configuration of best aim (`experiments.robust`).

Repeats: EI uses the standard deviation of the mean response (the noise term left out). Exact
repeats of observed configurations are excluded unless the fitted noise variance exceeds the
signal variance; near repeats (`gaussian_process.indistinguishable`) score no EI either, and are
measured only by the rules. Points already in the batch and failed configurations are always
excluded. A fidelity factor (`experiments.suggest.fidelity`) makes candidates configurations at
the lengths of a ladder, scored per second of trial, judged and recommended at the full length.
"""

from experiments.suggest.bayes.candidates import MAX_SCORED
from experiments.suggest.bayes.incumbent import MODEL_NAME
from experiments.suggest.bayes.models import Models
from experiments.suggest.bayes.optimize import CANDIDATES, bayes_batch
from experiments.suggest.bayes.rules import FINAL_SHARE, MAX_CHALLENGE_RUNS

__all__ = [
    "CANDIDATES",
    "FINAL_SHARE",
    "MAX_CHALLENGE_RUNS",
    "MAX_SCORED",
    "MODEL_NAME",
    "Models",
    "bayes_batch",
]
