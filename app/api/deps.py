"""FastAPI dependencies: the per-request session and the process-wide service handles."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from typing import Annotated, Any

from fastapi import Depends, Header, HTTPException, Path, Request, Response, status
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import ClientDisconnect

from app.api.schemas.common import error_responses
from app.config import Settings
from app.db.session import AsyncSession, Database
from app.queue import TaskQueue
from app.services import access, api_keys
from app.services.api_keys import Principal
from app.services.tallies import TallyCache
from experiments.galera.target_spec import TargetSpec


def get_database(request: Request) -> Database:
    """The database the app was started with."""
    database: Database = request.app.state.database
    return database


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    """One session per request, closed (and rolled back if uncommitted) at its end: on a
    keyed route the one `KeyFirstRoute` checked the key in."""
    opened: AsyncSession | None = getattr(request.state, "session", None)
    if opened is not None:
        yield opened
        return
    async with get_database(request).session() as session:
        yield session


def get_queue(request: Request) -> TaskQueue:
    """The broker handle."""
    queue: TaskQueue = request.app.state.queue
    return queue


def get_targets(request: Request) -> Mapping[str, TargetSpec]:
    """The operator's targets by name."""
    targets: Mapping[str, TargetSpec] = request.app.state.targets
    return targets


def get_tallies(request: Request) -> TallyCache:
    """What the experiments' trials add up to, kept by this process per trials revision."""
    cache: TallyCache = request.app.state.tallies
    return cache


def get_settings(request: Request) -> Settings:
    """The settings the app was started with."""
    settings: Settings = request.app.state.settings
    return settings


SessionDep = Annotated[AsyncSession, Depends(get_session)]
DatabaseDep = Annotated[Database, Depends(get_database)]
QueueDep = Annotated[TaskQueue, Depends(get_queue)]
TargetsDep = Annotated[Mapping[str, TargetSpec], Depends(get_targets)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
TalliesDep = Annotated[TallyCache, Depends(get_tallies)]

# Ids are 32-bit database integers: anything larger can name nothing and must not reach a driver.
ExperimentId = Annotated[int, Path(ge=1, le=2**31 - 1)]
TrialId = Annotated[int, Path(ge=1, le=2**31 - 1)]

_bearer = HTTPBearer(
    auto_error=False,
    description="An API key made with `galera-doe keys create OWNER`, as `Bearer <key>`.",
)


def _unauthorized(message: str) -> HTTPException:
    return HTTPException(
        status.HTTP_401_UNAUTHORIZED, message, headers={"WWW-Authenticate": "Bearer"}
    )


async def current_principal(
    request: Request,
    session: SessionDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The owner of the request's API key; 401 without a valid, unrevoked one."""
    known: Principal | None = getattr(request.state, "principal", None)
    if known is not None:
        return known  # checked by KeyFirstRoute before the body was read
    if credentials is None:
        raise _unauthorized("an API key is required: send the header Authorization: Bearer <key>")
    principal = await api_keys.authenticate(session, token=credentials.credentials)
    if principal is None:
        raise _unauthorized("the API key is not valid or was revoked")
    request.state.principal = principal
    return principal


JSON_MEDIA_TYPE = "application/json"
# What a route that reads a body may answer for the body alone (413: the BodySizeLimit
# middleware), documented on every such route.
BODY_RESPONSES = error_responses(413, 415)


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == JSON_MEDIA_TYPE or (
        media.startswith("application/") and media.endswith("+json")
    )


async def require_json_text(request: Request) -> None:
    """A non-empty body must be declared JSON (415 otherwise) and be UTF-8 text, as JSON between
    systems is (RFC 8259; 422 naming the first bad byte otherwise). FastAPI itself would answer
    the first with a 422 that names no rule and the second with an undocumented 400."""
    try:
        body = await request.body()
    except ClientDisconnect:
        return  # BodySizeLimit answered 413 and cut the body off: nothing to check
    if not body:
        return
    content_type = request.headers.get("content-type", "")
    if not _is_json(content_type):
        raise HTTPException(
            status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            f"the body must be JSON: send Content-Type: {JSON_MEDIA_TYPE}"
            f" (got {content_type or 'none'})",
        )
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RequestValidationError(
            [
                {
                    "type": "json_invalid",
                    "loc": ("body", error.start),
                    "msg": f"JSON must be UTF-8 text: byte {body[error.start]:#04x} at offset"
                    f" {error.start} is not",
                    "input": {},
                }
            ]
        ) from None


class KeyFirstRoute(APIRoute):
    """A route that checks the API key before FastAPI reads the body: a request without a
    valid key is 401 whatever it sends (a body that is not JSON included), not 400 or 422.
    The key is checked in the request's session, which the route then goes on with. A route
    that reads a body then checks it is JSON text (`require_json_text`), and documents the
    answers about the body (BODY_RESPONSES)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        if self.body_field is not None:
            # Built again with the body's answers: FastAPI reads the models of the documented
            # answers while it builds the route.
            kwargs["responses"] = BODY_RESPONSES | (kwargs.get("responses") or {})
            super().__init__(path, endpoint, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        reads_body = self.body_field is not None

        async def key_first(request: Request) -> Response:
            credentials = await _bearer(request)
            async with get_database(request).session() as session:
                await current_principal(request, session, credentials)
                if reads_body:
                    await require_json_text(request)
                request.state.session = session
                return await handler(request)

        return key_first


CurrentKey = Annotated[Principal, Depends(current_principal)]


async def owned_experiment(
    experiment_id: ExperimentId, session: SessionDep, viewer: CurrentKey
) -> int:
    """The experiment id of the path, 404 unless the key's owner (or an admin) may see it."""
    await access.visible_experiment(session, experiment_id=experiment_id, viewer=viewer)
    return experiment_id


async def owned_trial(trial_id: TrialId, session: SessionDep, viewer: CurrentKey) -> int:
    """The trial id of the path, 404 unless the key's owner (or an admin) may see it."""
    await access.check_trial_visible(session, trial_id=trial_id, viewer=viewer)
    return trial_id


OwnedExperimentId = Annotated[int, Depends(owned_experiment)]
OwnedTrialId = Annotated[int, Depends(owned_trial)]

IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{1,200}$"
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        pattern=IDEMPOTENCY_KEY_PATTERN,
        description="Any 1 to 200 printable ASCII characters, e.g. a UUID; a retry with the "
        "same key and body does nothing twice and gets the first request's experiment back.",
    ),
]
