"""``python -m jetwire``: the ``jetwire`` command line."""
from __future__ import annotations

import sys


def main() -> int:
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
