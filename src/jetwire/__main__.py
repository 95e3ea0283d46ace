"""``python -m jetwire``: the ``jetwire`` command line."""
from __future__ import annotations

import signal
import sys


def main() -> int:
    # Ctrl-C and SIGTERM reach the command even when it was started with them blocked
    # (a signal mask is inherited from the parent: a launcher that blocked them while it
    # forked would otherwise leave the command deaf to Ctrl-C for its whole run)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        import click  # noqa: F401 - the extra's packages, checked before anything else
        import rich  # noqa: F401

        from jetwire.cli.main import main as cli_main
    except ImportError as exc:  # click / rich missing
        if (exc.name or "").split(".")[0] not in ("click", "rich"):
            raise
        print(f"error: the jetwire command needs the 'cli' extra ({exc.name} is missing): "
              "pip install 'jetwire[cli]'", file=sys.stderr)
        return 1
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
