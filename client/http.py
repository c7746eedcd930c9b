"""A small synchronous HTTP client of the galera-doe REST API (CLI, demo, notebooks)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import tenacity

DEFAULT_URL = "http://127.0.0.1:8000"
RETRIES = 3
RETRY_PAUSE_S = 0.5


class ApiError(RuntimeError):
    """The API answered with an error; the message is one readable line. `fields` holds each
    field error as (where, rule), where dotted as the request names it ("observations.3.config")."""

    def __init__(
        self, status_code: int, message: str, fields: tuple[tuple[str, str], ...] = ()
    ) -> None:
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code
        self.fields = fields


class Client:
    """Calls the REST API; every method returns the decoded JSON body.

    `api_key`, when given, is sent as `Authorization: Bearer <key>` with every request.
    """

    def __init__(
        self, base_url: str = DEFAULT_URL, *, api_key: str | None = None, timeout: float = 30.0
    ) -> None:
        self.base_url = base_url
        self.api_key = api_key
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=base_url, timeout=timeout, headers=headers)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _request(
        self, method: str, path: str, *, idempotency_key: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        """One request; one with an idempotency key is retried (safely: the server does it
        once) after a lost connection or a 503, `RETRIES` times with a growing pause."""
        if idempotency_key is None:
            response = self._http.request(method, path, **kwargs)
        else:
            response = self._retried(method, path, idempotency_key, **kwargs)
        if response.is_error:
            raise ApiError(response.status_code, _message(response), _fields(response))
        return response

    def _retried(self, method: str, path: str, key: str, **kwargs: Any) -> httpx.Response:
        headers = {"Idempotency-Key": key}
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(httpx.TransportError)
            | tenacity.retry_if_result(
                lambda response: response.status_code == httpx.codes.SERVICE_UNAVAILABLE
            ),
            stop=tenacity.stop_after_attempt(RETRIES + 1),
            wait=tenacity.wait_exponential(multiplier=RETRY_PAUSE_S, min=RETRY_PAUSE_S),
            # The last answer or error goes to the caller as it came, not wrapped.
            retry_error_callback=lambda state: state.outcome.result(),  # type: ignore[union-attr]
        )
        return retrying(self._http.request, method, path, headers=headers, **kwargs)

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise ApiError(
                response.status_code,
                f"the answer of {response.url} is not JSON: is {self.base_url} the galera-doe API?",
            ) from None

    def health(self) -> dict[str, Any]:
        """Database and broker reachability."""
        return self._call("GET", "/health")  # type: ignore[no-any-return]

    def create_experiment(
        self, spec: dict[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Submit an experiment; returns it with its planned trials. It is sent with an
        idempotency key (a new one unless given), so retries make one experiment."""
        key = idempotency_key or str(uuid.uuid4())
        return self._call("POST", "/experiments", json=spec, idempotency_key=key)  # type: ignore[no-any-return]

    def experiments(
        self, *, status: str | None = None, target: str | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        """The key owner's experiments, newest first, of one status and target when given."""
        params = _present(status=status, target=target, limit=limit)
        return self._call("GET", "/experiments", params=params)  # type: ignore[no-any-return]

    def experiment(self, experiment_id: int) -> dict[str, Any]:
        """One experiment with its progress."""
        return self._call("GET", f"/experiments/{experiment_id}")  # type: ignore[no-any-return]

    def trials(self, experiment_id: int) -> list[dict[str, Any]]:
        """The experiment's trials in run order."""
        return self._call("GET", f"/experiments/{experiment_id}/trials")  # type: ignore[no-any-return]

    def trial(self, trial_id: int) -> dict[str, Any]:
        """One trial with its raw output."""
        return self._call("GET", f"/trials/{trial_id}")  # type: ignore[no-any-return]

    def design(self, experiment_id: int) -> dict[str, Any]:
        """The experiment's run table with its design report."""
        return self._call("GET", f"/experiments/{experiment_id}/design")  # type: ignore[no-any-return]

    def design_csv(self, experiment_id: int) -> str:
        """The experiment's run table as CSV, to run its trials by hand."""
        path = f"/experiments/{experiment_id}/design"
        return self._request("GET", path, params={"format": "csv"}).text

    def preview_design(self, request: dict[str, Any]) -> dict[str, Any]:
        """Plan a design (`factors`, `design`, `constraints`, `target`) without storing it."""
        return self._call("POST", "/designs/preview", json=request)  # type: ignore[no-any-return]

    def strategies(self) -> list[dict[str, Any]]:
        """The engine's strategies: name, what each does, whether it can close a loop."""
        return self._call("GET", "/strategies")  # type: ignore[no-any-return]

    def targets(self) -> list[dict[str, Any]]:
        """The operator's targets: name, kind, whether it runs trials, factors and responses."""
        return self._call("GET", "/targets")  # type: ignore[no-any-return]

    def start(
        self,
        experiment_id: int,
        *,
        restart_replicates: bool = False,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Queue the pending trials (with an idempotency key, retried like a submit);
        `restart_replicates` restarts every node before a trial that measures a configuration
        again."""
        key = idempotency_key or str(uuid.uuid4())
        path = f"/experiments/{experiment_id}/start"
        body = {"restart_replicates": restart_replicates}
        return self._call("POST", path, json=body, idempotency_key=key)  # type: ignore[no-any-return]

    def cancel(self, experiment_id: int) -> dict[str, Any]:
        """Cancel what has not run."""
        return self._call("POST", f"/experiments/{experiment_id}/cancel")  # type: ignore[no-any-return]

    def record_observations(
        self, experiment_id: int, observations: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Record results measured elsewhere (on a runnable target: imported runs)."""
        path = f"/experiments/{experiment_id}/observations"
        return self._call("POST", path, json=observations)  # type: ignore[no-any-return]

    def analysis(
        self, experiment_id: int, *, response: str | None = None, model: str | None = None
    ) -> dict[str, Any]:
        """The fitted model and its optimum."""
        params = _present(model=model, response=response)
        path = f"/experiments/{experiment_id}/analysis"
        return self._call("GET", path, params=params)  # type: ignore[no-any-return]

    def surface(
        self,
        experiment_id: int,
        *,
        x: str | None = None,
        y: str | None = None,
        response: str | None = None,
        model: str | None = None,
        points: int = 40,
        y_points: int | None = None,
    ) -> dict[str, Any]:
        """The fitted response over `x` (and `y`), the other factors at the optimum."""
        params = _present(
            x=x, y=y, response=response, model=model, points=points, y_points=y_points
        )
        path = f"/experiments/{experiment_id}/surface"
        return self._call("GET", path, params=params)  # type: ignore[no-any-return]

    def plot(
        self,
        experiment_id: int,
        kind: str,
        *,
        x: str | None = None,
        y: str | None = None,
        response: str | None = None,
        model: str | None = None,
        width: int = 800,
        height: int = 600,
    ) -> bytes:
        """A review plot rendered by the server, as PNG bytes (`kind`: contour, surface,
        interaction, main_effects, pareto, half_normal, residuals, progress)."""
        params = _present(x=x, y=y, response=response, model=model, width=width, height=height)
        path = f"/experiments/{experiment_id}/plots/{kind}.png"
        return self._request("GET", path, params=params).content

    def suggest(
        self, experiment_id: int, *, strategy: str = "auto", count: int = 1
    ) -> dict[str, Any]:
        """What to run next by `strategy`: the plan with its stored suggestions."""
        path = f"/experiments/{experiment_id}/suggestions"
        body = {"strategy": strategy, "count": count}
        return self._call("POST", path, json=body)  # type: ignore[no-any-return]

    def suggestions(self, experiment_id: int) -> list[dict[str, Any]]:
        """Every suggestion made for the experiment."""
        path = f"/experiments/{experiment_id}/suggestions"
        return self._call("GET", path)  # type: ignore[no-any-return]

    def accept(self, experiment_id: int, suggestion_id: int) -> dict[str, Any]:
        """Turn a suggestion into a trial and run it; returns the trial."""
        path = f"/experiments/{experiment_id}/suggestions/{suggestion_id}/accept"
        return self._call("POST", path)  # type: ignore[no-any-return]

    def confirm(self, experiment_id: int, **options: object) -> dict[str, Any]:
        """Confirm the configuration to deploy against the baseline (`ConfirmIn`'s options:
        pairs, max_pairs, power, fresh, seed); returns the confirmation, its runs sent."""
        path = f"/experiments/{experiment_id}/confirm"
        return self._call("POST", path, json=_present(**options))  # type: ignore[no-any-return]

    def confirmations(self, experiment_id: int) -> list[dict[str, Any]]:
        """The experiment's confirmations, newest first."""
        path = f"/experiments/{experiment_id}/confirmations"
        return self._call("GET", path)  # type: ignore[no-any-return]

    def confirmation(self, experiment_id: int, confirmation_id: int) -> dict[str, Any]:
        """One confirmation, with its result once its runs ended."""
        path = f"/experiments/{experiment_id}/confirmations/{confirmation_id}"
        return self._call("GET", path)  # type: ignore[no-any-return]

    def optimize(
        self,
        experiment_id: int,
        *,
        budget: int,
        budget_seconds: float | None = None,
        strategy: str = "auto",
        batch_size: int = 1,
        stop_when_expected_improvement_below: float | None = None,
        restart_replicates: bool = False,
    ) -> dict[str, Any]:
        """Start the closed loop; returns the loop (follow it in `experiment()`).
        `budget_seconds` is a budget of trial time beside the `budget` of trials."""
        body = {
            "budget": budget,
            "budget_seconds": budget_seconds,
            "strategy": strategy,
            "batch_size": batch_size,
            "stop_when_expected_improvement_below": stop_when_expected_improvement_below,
            "restart_replicates": restart_replicates,
        }
        path = f"/experiments/{experiment_id}/optimize"
        return self._call("POST", path, json=body)  # type: ignore[no-any-return]


def _present(**params: object) -> dict[str, object]:
    """Query parameters without the ones left out (None)."""
    return {name: value for name, value in params.items() if value is not None}


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    detail = body.get("detail") if isinstance(body, dict) else body
    if detail is None:
        return response.reason_phrase
    if isinstance(detail, list):
        return "; ".join(_located(item) for item in detail)
    return str(detail)


def _located(item: object) -> str:
    if not isinstance(item, dict):
        return str(item)
    where = _where(item)
    return f"{where}: {item.get('msg')}" if where else str(item.get("msg"))


def _where(item: dict[str, Any]) -> str:
    """A field error's location without its part of the request ("body", "query"), dotted."""
    return ".".join(str(part) for part in item.get("loc", [])[1:])


def _fields(response: httpx.Response) -> tuple[tuple[str, str], ...]:
    try:
        body = response.json()
    except ValueError:
        return ()
    detail = body.get("detail") if isinstance(body, dict) else None
    if not isinstance(detail, list):
        return ()
    return tuple((_where(item), str(item.get("msg"))) for item in detail if isinstance(item, dict))
