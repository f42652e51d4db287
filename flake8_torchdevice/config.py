"""Options from ``[tool.torchdevice]`` in pyproject.toml, and code selection.

Selection is the flake8 plugin's, so that both front ends agree: flake8's
decision rules (a code matching an explicit ``select``/``extend-select``
prefix runs unless an explicit ``ignore`` matches too, and then the longer
prefix wins), plus the plugin's rule for opt-in codes (``DEFAULT_ENABLED =
False``): they run only when named by a specific prefix (``TDV40``,
``TDV402``), never by plain ``TDV``.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from .plugin import explicitly_selected
from .rules import ALL_RULES, Rule

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

KEYS = ("select", "extend-select", "ignore", "extend-ignore", "exclude", "extend-exclude")
CODE_PREFIX = re.compile(r"TDV[0-9]{0,3}")


class ConfigError(Exception):
    """A problem the user must fix; the CLI prints it as one line, exit 2."""


@dataclass
class Config:
    path: Optional[Path] = None  # the pyproject.toml read, if any
    values: dict = field(default_factory=dict)

    def get(self, key: str) -> Optional[list[str]]:
        return self.values.get(key)

    @property
    def base(self) -> Path:
        return self.path.parent if self.path else Path.cwd()


def find_pyproject(start: Path) -> Optional[Path]:
    for folder in [start, *start.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load(path: Optional[Path]) -> Config:
    if path is None:
        return Config()
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML in {path}: {exc}") from None
    table = data.get("tool", {}).get("torchdevice", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.torchdevice] must be a table")
    values = {}
    for key, value in table.items():
        normal = key.replace("_", "-")
        if normal not in KEYS:
            raise ConfigError(f"{path}: unknown key {key!r} in [tool.torchdevice] (known: {', '.join(KEYS)})")
        values[normal] = as_list(value, f"{path}: {key}")
    return Config(path, values)


def as_list(value, where: str) -> list[str]:
    """A TOML list of strings, or one comma-separated string."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where} must be a list of strings")
    return [item.strip() for item in value if item.strip()]


def check_codes(prefixes: Sequence[str], where: str) -> list[str]:
    for prefix in prefixes:
        if not CODE_PREFIX.fullmatch(prefix):
            raise ConfigError(f"{where}: {prefix!r} is not a TDV code or prefix (e.g. TDV, TDV2, TDV201)")
    return list(prefixes)


def _longest(code: str, prefixes: Sequence[str]) -> int:
    return max((len(p) for p in prefixes if code.startswith(p)), default=-1)


def flake8_decision(rule: type[Rule], select: Optional[Sequence[str]], extend_select: Sequence[str],
                    ignore: Sequence[str]) -> bool:
    """flake8's decision for one code (see flake8.style_guide.DecisionEngine)."""
    explicit_select = [*(select or ()), *extend_select]
    implicit_select = [] if select is not None else ["TDV"]
    implicit_ignore = [] if rule.DEFAULT_ENABLED else [rule.CODE]
    sel_exp, sel_imp = _longest(rule.CODE, explicit_select), _longest(rule.CODE, implicit_select)
    ign_exp, ign_imp = _longest(rule.CODE, ignore), _longest(rule.CODE, implicit_ignore)
    if sel_exp < 0 and sel_imp < 0:
        return False
    if ign_exp < 0 and ign_imp < 0:
        return True
    if sel_exp >= 0 and ign_exp < 0:
        return True
    if sel_exp < 0 and ign_exp >= 0:
        return False
    # Both explicit, or both implicit: the longer prefix wins, ties ignore.
    return max(sel_exp, sel_imp) > max(ign_exp, ign_imp)


def is_enabled(rule: type[Rule], select: Optional[Sequence[str]], extend_select: Sequence[str],
               ignore: Sequence[str]) -> bool:
    """The flake8 plugin's decision: flake8's, and an opt-in code must be
    named by a specific prefix (``TDV40``/``TDV402``; plain ``TDV`` is not)."""
    if not rule.DEFAULT_ENABLED and not explicitly_selected(rule.CODE, (select, extend_select)):
        return False
    return flake8_decision(rule, select, extend_select, ignore)


def selected_rules(cfg: Config, select=None, ignore=None, extend_select=(), extend_ignore=()) -> tuple[type[Rule], ...]:
    """The rules a run enables: the command line's choices over ``[tool.torchdevice]``'s."""
    select = select if select is not None else cfg.get("select")
    ignore = ignore if ignore is not None else (cfg.get("ignore") or [])
    extend_select = [*(cfg.get("extend-select") or []), *extend_select]
    ignore = [*ignore, *(cfg.get("extend-ignore") or []), *extend_ignore]
    for name, value in (("select", select or []), ("extend-select", extend_select), ("ignore", ignore)):
        check_codes(value, name)
    return enabled_rules(select, extend_select, ignore)


def enabled_rules(select, extend_select, ignore) -> tuple[type[Rule], ...]:
    return tuple(rule for rule in ALL_RULES if is_enabled(rule, select, extend_select, ignore))
