"""The root of the `galera-doe` command line: the typer app, its global options (--url,
--api-key), the shared argument types, and the one place where errors become a line on stderr and
an exit code."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NoReturn

import httpx
import typer
from rich.console import Console
from typer.core import TyperGroup

from client import console as show
from client.http import DEFAULT_URL, ApiError, Client

# Exit codes: 1 the API refused or could not be reached, 2 bad input on the command line (a file).
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CommandError(RuntimeError):
    """A command could not do what was asked; the message is one line for the user."""


@dataclass(frozen=True)
class Remote:
    """Where the API is and how to authenticate: the global options."""

    url: str = DEFAULT_URL
    api_key: str | None = None

    def client(self) -> Client:
        """A client of the API (close it, or use it in a `with` block)."""
        return Client(self.url, api_key=self.api_key)


class _ReportingGroup(TyperGroup):
    """The root command group: every error a user can cause ends as one line on stderr and an
    exit code, whichever command raised it (no traceback)."""

    def invoke(self, ctx: typer.Context) -> Any:
        with _errors_reported(ctx):
            return super().invoke(ctx)


def fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _one_line(text: str) -> str:
    return " ".join(text.split())


@contextmanager
def _errors_reported(ctx: typer.Context) -> Iterator[None]:
    try:
        yield
    except ApiError as error:
        fail(_one_line(str(error)))
    except httpx.TimeoutException:
        fail(f"the API at {_url(ctx)} did not answer in time")
    except httpx.TransportError:
        fail(f"cannot reach the API at {_url(ctx)} (is `galera-doe serve` running?)")
    except show.SpecFileError as error:
        fail(_one_line(str(error)), EXIT_USAGE)
    except (show.WaitTimeoutError, CommandError) as error:
        fail(_one_line(str(error)))
    except KeyboardInterrupt:
        fail("interrupted (what runs in the workers goes on)", EXIT_INTERRUPTED)


def _url(ctx: typer.Context) -> str:
    remote = ctx.find_object(Remote)
    return remote.url if remote is not None else DEFAULT_URL


def api_client(ctx: typer.Context) -> Client:
    remote = ctx.find_object(Remote) or Remote()
    try:
        url = httpx.URL(remote.url)
    except httpx.InvalidURL:
        url = None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        fail(
            f"invalid API URL {remote.url!r} (--url or GALERA_DOE_URL): expected http://HOST:PORT",
            EXIT_USAGE,
        )
    return remote.client()


def stdout() -> Console:
    return Console()


cli = typer.Typer(
    cls=_ReportingGroup,
    help="Design-of-experiments optimizer for Galera cluster benchmarks.",
    no_args_is_help=True,
)

ExperimentId = Annotated[int, typer.Argument(metavar="ID", help="experiment id", min=1)]
SpecFile = Annotated[
    Path, typer.Argument(metavar="FILE.yaml", help="experiment file (YAML)", show_default=False)
]
RestartReplicates = Annotated[
    bool,
    typer.Option(
        "--restart-replicates",
        help="restart every node before a trial that measures a configuration again",
    ),
]
Timeout = Annotated[
    float, typer.Option(help="seconds to wait with --wait before giving up (the work goes on)")
]
Model = Annotated[
    str | None,
    typer.Option(
        help="model to fit: linear, interaction, quadratic or auto (the default: the terms the"
        " runs support, selected by AICc)",
        show_default=False,
    ),
]


@cli.callback()
def _global_options(
    ctx: typer.Context,
    url: Annotated[
        str, typer.Option(envvar="GALERA_DOE_URL", help="base URL of the galera-doe API")
    ] = DEFAULT_URL,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="GALERA_DOE_API_KEY",
            help="API key, sent as `Authorization: Bearer <key>`",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Design-of-experiments optimizer for Galera cluster benchmarks."""
    ctx.obj = Remote(url=url.rstrip("/"), api_key=api_key or None)


# Experiments over the API -----------------------------------------------------------------------
