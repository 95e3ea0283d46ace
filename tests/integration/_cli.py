"""The ``jetwire`` command run in-process for the CLI tests (click's ``CliRunner``)."""
from __future__ import annotations

from typing import Any

from click.testing import CliRunner, Result

from jetwire.cli.main import cli


def run(*args: Any, input: Any = None) -> Result:
    """Invoke in-process; stdout and stderr kept apart."""
    try:
        runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]  # click < 8.2
    except TypeError:
        runner = CliRunner()
    return runner.invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)
