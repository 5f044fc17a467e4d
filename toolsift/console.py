"""The ``toolsift`` command's entry point: the CLI, or, when the install lacks what a command
needs, one line naming the extra to install (exit 1) instead of a traceback."""

from __future__ import annotations

import sys

from toolsift.extras import missing_extra


def main() -> None:
    try:
        from toolsift.cli import main as cli

        cli()
    except ImportError as error:
        missing = missing_extra(error, "the toolsift command")
        if missing is None:
            raise
        sys.stderr.write(f"Error: {missing}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
