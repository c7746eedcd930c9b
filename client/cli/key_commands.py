"""`galera-doe keys`: API keys managed straight on the metadata database, where the API runs
(making the first key cannot need a key)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from app.config import Settings
from app.db.models import ApiKey
from app.services import api_keys
from app.services.errors import ConflictError, NotFoundError
from client.cli.base import CommandError, cli, stdout
from experiments.errors import DomainError

keys_cli = typer.Typer(
    help="Manage API keys on the metadata database (GALERA_DOE_DATABASE_URL): run it where the "
    "API runs; it needs no key and does not use --url.",
    no_args_is_help=True,
)
cli.add_typer(keys_cli, name="keys")


def _database_url() -> str:
    return Settings().database_url


@contextmanager
def _refusals_reported() -> Iterator[None]:
    try:
        yield
    except (NotFoundError, ConflictError, DomainError) as error:
        raise CommandError(str(error)) from None


@keys_cli.command("create")
def keys_create(
    owner: Annotated[
        str, typer.Argument(help="who the key is for; their experiments are theirs alone")
    ],
    admin: Annotated[
        bool, typer.Option("--admin", help="the key sees and manages everybody's experiments")
    ] = False,
) -> None:
    """Make a key and print its token: shown this once, stored only hashed."""
    with _refusals_reported():
        made = api_keys.create_key(_database_url(), owner, admin=admin)
    typer.echo(made.token)
    typer.echo(
        f"key {made.key.id} ({made.key.prefix}…) for {made.key.owner}, role {made.key.role}; "
        "keep the token: it cannot be shown again",
        err=True,
    )


@keys_cli.command("list")
def keys_list() -> None:
    """List every key: id, owner, role, prefix, when made and revoked (never a token)."""
    with _refusals_reported():
        listed = api_keys.list_keys(_database_url())
    _print_keys(stdout(), listed)


@keys_cli.command("revoke")
def keys_revoke(
    key: Annotated[str, typer.Argument(metavar="ID|PREFIX", help="the key's id or prefix")],
) -> None:
    """Revoke a key: requests with it are refused (401) from now on."""
    with _refusals_reported():
        revoked = api_keys.revoke_key(_database_url(), key)
    typer.echo(f"key {revoked.id} ({revoked.prefix}…) of {revoked.owner} revoked")


# The service itself -----------------------------------------------------------------------------


def _print_keys(console: Console, keys: Sequence[ApiKey]) -> None:
    """API keys as a table; tokens are never stored, so never shown."""
    table = Table(title=f"API keys ({len(keys)})")
    for column in ("id", "owner", "role", "prefix", "created", "revoked"):
        table.add_column(column)
    for key in keys:
        revoked = key.revoked_at.strftime("%Y-%m-%d %H:%M") if key.revoked_at else ""
        table.add_row(
            str(key.id),
            escape(key.owner),
            key.role,
            f"{key.prefix}…",
            key.created_at.strftime("%Y-%m-%d %H:%M"),
            revoked,
        )
    console.print(table)
