"""The ``torchdevice`` command: argument parsing and orchestration only.

Exit status: 0 clean, 1 findings (or files that could not be analysed),
2 usage, configuration or I/O errors -- each reported as one line on stderr.
Ctrl-C and a closed stdout are handled by the entry point, ``cli.main``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from . import __version__, cache, config, files, formats
from .runner import Options, Outcome, lint_path, lint_paths

PROG = "torchdevice"


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage block
        raise UsageError(f"{message} (see --help)")


def _codes(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _jobs(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {value!r}")
    return int(value)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Find PyTorch device-handling mistakes (TDV codes).")
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (default: .); - reads stdin")
    p.add_argument("--select", type=_codes, help="only these codes or prefixes, e.g. TDV1,TDV201")
    p.add_argument("--extend-select", type=_codes, default=[], help="add codes, e.g. opt-in TDV402")
    p.add_argument("--ignore", type=_codes, help="codes or prefixes to skip")
    p.add_argument("--extend-ignore", type=_codes, default=[], help="add codes to skip")
    p.add_argument("--exclude", type=_codes, help="glob patterns to skip (replaces the config's)")
    p.add_argument("--extend-exclude", type=_codes, default=[], help="more glob patterns to skip")
    p.add_argument("--format", choices=formats.FORMATS, default="text", help="output format (default: text)")
    p.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    p.add_argument("--diff", action="store_true", help="print the fixes as a diff; change nothing")
    p.add_argument("--unsafe-fixes", action="store_true", help="with --fix/--diff, also apply unsafe fixes")
    p.add_argument("--add-noqa", action="store_true",
                   help="add '# noqa: TDVxxx' to every line with a finding (adopt new rules; .py files only)")
    p.add_argument("-j", "--jobs", type=_jobs, default=os.cpu_count() or 1,
                   help="parallel workers (default: all cores)")
    p.add_argument("--stdin-filename", default="stdin", help="name to report for - (a .ipynb name reads a notebook)")
    p.add_argument("--config", type=Path, help="pyproject.toml to read (default: the nearest one upwards)")
    p.add_argument("--isolated", action="store_true", help="ignore pyproject.toml")
    p.add_argument("--exit-zero", action="store_true",
                   help="exit 0 even with findings or files that could not be checked (usage errors still exit 2)")
    p.add_argument("--statistics", action="store_true", help="count the findings per code (--format text)")
    p.add_argument("--no-cache", action="store_true", help="lint every file afresh; read and keep no results")
    p.add_argument("--cache-dir", type=Path, metavar="DIR",
                   help=f"where results are kept (default: {cache.DIRECTORY} beside pyproject.toml, else here)")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    return p


def execute(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["rule"]:  # a file named "rule" is linted as ./rule
            return show_rule(argv[1:])
        if argv[:1] == ["server"]:  # likewise ./server
            from .server import serve

            return serve(argv[1:])
        return run(build_parser().parse_args(argv))
    except (UsageError, config.ConfigError) as exc:
        _say(f"error: {exc}")
        return 2


def _settings(args) -> tuple[Options, files.Excluder]:
    path = args.config or (None if args.isolated else config.find_pyproject(Path.cwd()))
    cfg = config.load(path)
    rules = config.selected_rules(cfg, args.select, args.ignore, args.extend_select, args.extend_ignore)
    codes = tuple(r.CODE for r in rules)
    options = Options(codes, fix=args.fix, diff=args.diff, unsafe_fixes=args.unsafe_fixes, add_noqa=args.add_noqa)
    if not (args.no_cache or args.fix or args.diff or args.add_noqa):  # only a pure lint reads and keeps results
        where = cache.prepare(args.cache_dir or cfg.base / cache.DIRECTORY)
        if where:
            options = dataclasses.replace(options, cache_dir=where, cache_salt=cache.salt(codes, args.unsafe_fixes))
    cfg_excludes = [*(cfg.get("exclude") or []), *(cfg.get("extend-exclude") or [])]
    excluder = files.Excluder(cfg_excludes, cfg.base) if args.exclude is None else files.Excluder([], cfg.base)
    excluder.patterns += files.Excluder([*(args.exclude or []), *args.extend_exclude], Path.cwd()).patterns
    return options, excluder


def run(args) -> int:
    if args.unsafe_fixes and not (args.fix or args.diff):
        raise UsageError("--unsafe-fixes needs --fix or --diff")
    if args.paths.count("-") > 1:
        raise UsageError("- (stdin) given more than once")
    if args.add_noqa and (args.fix or args.diff):
        raise UsageError("--add-noqa cannot be combined with --fix or --diff")
    if args.add_noqa and "-" in args.paths:
        raise UsageError("--add-noqa edits files in place: it does not read - (stdin)")
    options, excluder = _settings(args)
    if args.statistics and args.format != "text":
        raise UsageError("--statistics works with --format text only")
    errors: list[str] = []
    paths = files.discover(args.paths or ["."], excluder, errors)
    outcomes = _lint(paths, options, args)
    findings = [f for o in outcomes for f in o.findings]
    notices = [formats.Notice(m) for m in errors]
    notices += [formats.Notice(m, o.path) for o in outcomes for m in [*o.problems, *filter(None, [o.io_error])]]
    errors += [o.io_error for o in outcomes if o.io_error]
    problems = [p for o in outcomes for p in o.problems]
    for message in problems + errors:
        _say(message)
    _emit(outcomes, findings, args, notices, bool(errors))
    if args.exit_zero:  # findings and files that could not be checked alike (CI uploads)
        return 0
    if errors:
        return 2
    if args.diff:
        return 1 if any(o.diff for o in outcomes) else 0
    return 1 if findings or problems else 0


def show_rule(argv: list[str]) -> int:
    """``torchdevice rule TDV201`` / ``rule --all``: print the rule's page."""
    from .rules import ALL_RULES
    from .ruledocs import UnknownRule, rule_page

    parser = _Parser(prog=f"{PROG} rule", description="Print a rule's documentation page.")
    parser.add_argument("code", nargs="?", help="a rule code, e.g. TDV201")
    parser.add_argument("--all", action="store_true", help="every rule's page")
    args = parser.parse_args(argv)
    if bool(args.code) == args.all:
        raise UsageError("rule needs a code (e.g. TDV201) or --all")
    codes = [rule.CODE for rule in ALL_RULES] if args.all else [args.code]
    if args.code and args.code not in {rule.CODE for rule in ALL_RULES}:
        raise UsageError(f"no rule {args.code!r} (known: {', '.join(r.CODE for r in ALL_RULES)})")
    try:
        pages = [rule_page(code) for code in codes]
    except UnknownRule as exc:
        raise UsageError(str(exc)) from None
    sys.stdout.write("\n".join(page if page.endswith("\n") else page + "\n" for page in pages))
    return 0


def _lint(paths: list[str], options: Options, args) -> list[Outcome]:
    on_disk = [p for p in paths if p != "-"]
    outcomes = dict(zip(on_disk, lint_paths(on_disk, options, args.jobs)))
    if "-" in paths:
        data = sys.stdin.buffer.read()
        outcomes["-"] = lint_path("-", args.stdin_filename, options, data)
    return [outcomes[p] for p in paths]


def _emit(outcomes: list[Outcome], findings: list, args, notices: list, failed: bool) -> None:
    if args.diff:
        sys.stdout.write("".join(o.diff for o in outcomes))
        return
    fixed = [o for o in outcomes if o.fixed]
    stdin_fixed = [o.output for o in outcomes if o.output is not None]
    report = formats.render(args.format, findings, notices, failed)
    if args.statistics:
        report += formats.statistics(findings)
    if stdin_fixed:  # stdout carries the fixed code; findings go to stderr
        sys.stdout.write(stdin_fixed[0])
        sys.stderr.write(report)
    else:
        sys.stdout.write(report)
    if fixed:
        count = sum(o.fixed for o in fixed)
        _say(f"fixed {count} finding{'s' * (count != 1)} in {len(fixed)} file{'s' * (len(fixed) != 1)}")
    if args.add_noqa:
        changed = [o for o in outcomes if o.noqa_added]
        count = sum(o.noqa_added for o in changed)
        _say(f"added # noqa to {count} line{'s' * (count != 1)} in {len(changed)} file{'s' * (len(changed) != 1)}")


def _say(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)
