"""The `galera-doe` command line: submit and follow experiments through the REST API (only over
HTTP, with `client.http.Client`), manage API keys, run the service itself (API, worker, lab
cluster, demo) and check an ssh target from the worker's machine. The commands register
themselves on `cli` in the order `--help` lists them."""

from __future__ import annotations

from client.cli import (
    confirm_commands,
    key_commands,
    rest_commands,
    review_commands,
    service_commands,
    target_commands,
)
from client.cli.base import cli

__all__ = [
    "cli",
    "confirm_commands",
    "key_commands",
    "main",
    "rest_commands",
    "review_commands",
    "service_commands",
    "target_commands",
]


def main() -> None:
    """Console-script entry point."""
    cli()
