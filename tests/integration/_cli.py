"""The ``jetwire`` command run in-process for the CLI tests (click's ``CliRunner``)."""
from __future__ import annotations

import signal
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


def like_a_terminal() -> None:
    """``preexec_fn`` for a command the test will Ctrl-C: SIGINT as a terminal's foreground
    job has it (default disposition, not blocked), whatever this test process inherited
    or was set to by earlier tests (an ignored SIGINT is inherited across exec)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
