"""The OpenAPI document says what the API does: schemathesis runs all four of its phases
(the schema's examples, the coverage phase's boundary and wrong-type values and unexpected
methods, fuzzing, and stateful sequences that follow the links it infers from the responses)
against the in-process app, with a key, on the seeded experiments of tests/app/test_schema_fuzz.

Every answer must be no server error, of a documented status code and content type, with a body
of the documented schema; data the schema refuses must be refused (negative_data_rejection) and
data it accepts accepted (positive_data_acceptance). The service has rules a schema cannot state
(low below high, the responses a target reports, a design's size), so valid data may still be
422, but only for such a rule (`type` domain_rule): a 422 from request validation, which the
schema describes, means the two disagree (89.0 was one: "not a valid integer" for an `integer`).
A 405 must list in `Allow` exactly the methods the document gives the path.

Generation is derandomized and bounded, so the run is the same every time and short.
"""

from __future__ import annotations

import os

import hypothesis
import schemathesis
from fastapi import FastAPI
from schemathesis.checks import not_a_server_error
from schemathesis.python import asgi
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.app import test_schema_fuzz as fuzz
from tests.app.test_schema_fuzz import Seeded, aim

# The fuzz module's database, broker, seeded experiments and app.
fuzz_broker = fuzz.fuzz_broker
fuzz_settings = fuzz.fuzz_settings
seeded = fuzz.seeded
fuzz_app = fuzz.fuzz_app

MAX_EXAMPLES = int(os.environ.get("GALERA_DOE_CONTRACT_EXAMPLES", "8"))
STATEFUL_SCENARIOS = int(os.environ.get("GALERA_DOE_CONTRACT_SCENARIOS", "15"))
SEED = 20261202
# The default expected statuses of positive_data_acceptance, and 422 for a rule the schema
# cannot state (checked by `refused_only_by_a_domain_rule`).
POSITIVE_STATUSES = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
SERVICE_RULES = {"domain_rule", "header_rule"}


@schemathesis.check
def refused_only_by_a_domain_rule(ctx, response, case) -> bool | None:
    """Data the schema accepts is refused with 422 only by the service's own rules."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 422:
        return None
    kinds = {error["type"] for error in response.json()["detail"]}
    assert kinds <= SERVICE_RULES, (
        f"the schema accepts what request validation refused: {response.json()['detail']}"
    )
    return None


@schemathesis.check
def allow_lists_the_documented_methods(ctx, response, case) -> bool | None:
    """A 405 lists in `Allow` the methods the document has for the path, no more, no fewer."""
    if response.status_code != 405:
        return None
    documented = {method.upper() for method in case.operation.schema[case.operation.path]}
    allowed = {m.strip() for value in response.headers["allow"] for m in value.split(",")}
    assert allowed == documented, (case.method, case.path, allowed, documented)
    return None


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    refused_only_by_a_domain_rule,
    allow_lists_the_documented_methods,
]

schema = fuzz.app_schema(
    SEED,
    MAX_EXAMPLES,
    {phase: {"enabled": True} for phase in ("examples", "coverage", "fuzzing", "stateful")},
    {"positive_data_acceptance": {"expected-statuses": POSITIVE_STATUSES}},
)


@schema.parametrize()
def test_every_operation_does_what_the_document_says(
    case: schemathesis.Case, seeded: Seeded, fuzz_app: FastAPI
):
    aim(case, seeded)
    headers = {"Authorization": f"Bearer {seeded.token}"}
    case.call_and_validate(headers=headers, checks=CHECKS, app=fuzz_app)


def test_sequences_of_calls_do_what_the_document_says(seeded: Seeded, fuzz_app: FastAPI):
    headers = {"Authorization": f"Bearer {seeded.token}"}

    class Workflow(schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: schemathesis.Case) -> dict:
            return {"headers": headers, "app": fuzz_app}

        def validate_response(self, response, case, additional_checks=None, **kwargs) -> None:
            checks = CHECKS
            if None in (case.path_parameters or {}).values():
                # A link inferred from a nullable id (a suggestion not accepted yet has no
                # trial_id) sends the text "None": the API rightly refuses it as no integer.
                checks = [check for check in CHECKS if check is not refused_only_by_a_domain_rule]
            case.validate_response(response, checks=checks)

    Workflow.run(
        settings=hypothesis.settings(
            max_examples=STATEFUL_SCENARIOS,
            stateful_step_count=6,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(hypothesis.HealthCheck),
        )
    )


def test_a_whole_number_written_with_a_fraction_is_the_integer(seeded: Seeded, fuzz_app: FastAPI):
    # JSON Schema's `integer` is any number without a fraction: 89.0 is one, 89.5 is not.
    headers = {"Authorization": f"Bearer {seeded.token}"}
    path = f"/experiments/{seeded.experiment_id}/suggestions"
    with asgi.get_client(fuzz_app) as client:
        whole = client.post(
            path, json={"strategy": "steepest_ascent", "count": 2.0}, headers=headers
        )
        fraction = client.post(path, json={"count": 2.5}, headers=headers)
        text = client.post(path, json={"count": "2"}, headers=headers)
    assert whole.status_code == 200, whole.text
    assert len(whole.json()["suggestions"]) == 2
    for refused in (fraction, text):
        assert refused.status_code == 422, refused.text
        assert refused.json()["detail"][0]["loc"] == ["body", "count"]
