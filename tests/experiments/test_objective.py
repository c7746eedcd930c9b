"""The objective's scale: chosen by the client, or by the kind of its response."""

import pytest

from experiments.errors import DomainError
from experiments.goals import default_scale
from experiments.objective import Objective


def known(name: str, field: str) -> None:
    """Every response name is measurable here."""


@pytest.mark.parametrize(
    ("response", "scale"),
    [
        ("latency_p95_ms", "log"),
        ("commit_latency_ms", "log"),
        ("restart_s", "log"),
        ("tps", "linear"),
        ("abort_rate", "linear"),
        ("tps_se", "linear"),
        ("errors_per_s", "linear"),
        ("reconnects_per_s", "linear"),
    ],
)
def test_a_duration_is_searched_on_a_log_scale_by_default(response, scale):
    assert default_scale(response) == scale
    assert Objective.parse({"response": response}, known).scale == scale


def test_the_client_chooses_the_scale():
    chosen = Objective.parse({"response": "latency_p95_ms", "scale": "linear"}, known)
    assert chosen.scale == "linear"
    assert Objective.parse({"response": "tps", "scale": "log"}, known).scale == "log"


def test_a_desirability_is_searched_as_it_is():
    items = [{"response": "latency_p95_ms", "goal": "minimize", "low": 5, "high": 60}]
    raw = {"response": "latency_p95_ms", "desirability": items}
    assert Objective.parse(raw, known).scale == "linear"
    with pytest.raises(DomainError) as refused:
        Objective.parse({**raw, "scale": "log"}, known)
    assert refused.value.field == "objective.scale"


def test_a_bad_scale_is_refused_naming_the_field():
    with pytest.raises(DomainError) as refused:
        Objective.parse({"response": "tps", "scale": "log10"}, known)
    assert refused.value.field == "objective.scale"
    assert "linear, log" in refused.value.rule


def test_the_scale_is_stored_and_an_older_objective_gets_the_default():
    parsed = Objective.parse({"response": "latency_p95_ms", "goal": "minimize"}, known)
    assert Objective.from_stored(parsed.as_dict()) == parsed
    older = {"response": "latency_p95_ms", "goal": "minimize", "constraints": []}
    assert Objective.from_stored(older).scale == "log"
