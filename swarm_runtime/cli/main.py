"""The ``swarm`` command: argument parsing, dispatch, and the mapping of errors to exit codes.

Exit codes (docs/reference/cli.md): 0 success, 1 run failed, 2 usage or definition error,
3 FailFast, 130 interrupted. A user never sees a traceback for a SwarmError: it is printed as one
line on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from swarm_runtime.cli.common import (
    EXIT_FAILED,
    EXIT_FAILFAST,
    EXIT_OK,
    EXIT_USAGE,
    interrupted,
)
from swarm_runtime.errors import FailFast, SwarmError, SwarmUsageError

Handler = Callable[[argparse.Namespace], int]


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout, with the terminal width read without importing shutil.

    argparse makes a formatter for every argument it adds; the stock one imports
    ``shutil`` (and with it the compression modules) to ask for the width.
    """

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            width = _columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


def _columns() -> int:
    """What ``shutil.get_terminal_size().columns`` answers: $COLUMNS, the terminal, 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Parser(argparse.ArgumentParser):
    """argparse that exits with our usage code and no traceback."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


_MODULES = (
    "run",
    "flows",
    "runs",
    "plan",
    "schema",
    "golden",
    "coverage",
    "results",
    "cassettes",
    "control",
    "worker",
    "studio",
)
"""The modules that register commands, in the order ``swarm --help`` lists them."""
_COMMANDS = {
    "run": "run",
    "flows": "flows",
    "runs": "runs",
    "plan": "plan",
    "schema": "schema",
    "golden": "golden",
    "coverage": "coverage",
    "results": "results",
    "cassettes": "cassettes",
    "pause": "control",
    "stop": "control",
    "resume": "control",
    "worker": "worker",
    "studio": "studio",
}
"""Which module registers each command."""
_RUNS_STEPS = frozenset({"run", "resume", "worker", "plan", "studio"})
"""The commands whose process runs steps: it reaps what their CLIs leave behind."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command tree; with ``command``, only the part that parses that command.

    A parser with one command parses its arguments exactly as the whole tree does; the
    whole tree is built for anything else (``--help``, a misspelt command).
    """
    from importlib import import_module

    parser = _Parser(
        prog="swarm",
        description="Run LLM agent flows one step at a time, with receipts, transcripts, events.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True
    home = _COMMANDS.get(command or "")
    for name in (home,) if home else _MODULES:
        import_module(f"swarm_runtime.cli.{name}").add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``swarm`` console script."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    problem = _not_utf8(arguments)
    if problem:
        print(f"swarm: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if not sys.warnoptions:  # what swarm_runtime deprecates is said (Python hides it)
        import warnings

        warnings.filterwarnings("default", category=DeprecationWarning, module="swarm_runtime")
    parser = build_parser(arguments[0] if arguments else None)
    args = parser.parse_args(arguments)
    handler: Handler = args.handler
    if args.command in _RUNS_STEPS:
        from swarm_runtime.engines.subreaper import reap_orphans

        reap_orphans()  # a daemon a step's CLI started stays ours to reap
    try:
        return handler(args)
    except SwarmUsageError as exc:
        _print_error(exc)
        return EXIT_USAGE
    except FailFast as exc:
        _print_error(exc)
        return EXIT_FAILFAST
    except SwarmError as exc:
        _print_error(exc)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return interrupted()
    except BrokenPipeError:
        # The reader went away (e.g. `swarm runs list | head`): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


def _not_utf8(arguments: Sequence[str]) -> str | None:
    """Why an argument cannot be used (its bytes are not UTF-8), or None.

    Python hands such bytes over as lone surrogates, which no file of a run can hold; they
    are refused before anything is written.
    """
    for number, argument in enumerate(arguments, start=1):
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError as exc:
            raw = os.fsencode(argument)
            return (
                f"argument {number} ({raw!r}) is not valid UTF-8 (at character "
                f"{exc.start}); arguments must be UTF-8 text"
            )
    return None


def _print_error(exc: BaseException) -> None:
    print(f"swarm: error: {exc}", file=sys.stderr)
    for note in getattr(exc, "__notes__", ()):
        print(f"swarm: {note}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
