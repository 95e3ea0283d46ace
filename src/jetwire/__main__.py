"""``python -m jetwire``: the ``jetwire`` command line."""
from __future__ import annotations

import sys


def _run() -> int:
    try:
        from jetwire.cli.main import main
    except ImportError as exc:  # click / rich missing
        if (exc.name or "").split(".")[0] not in ("click", "rich"):
            raise
        print(f"error: the jetwire command needs the 'cli' extra ({exc}); "
              "install it with: pip install 'jetwire[cli]'", file=sys.stderr)
        return 1
    return main()


if __name__ == "__main__":
    sys.exit(_run())
