"""Read the fixture programs: ``# expect:`` lines and ``# proof:`` headers.

Shared by the static tests and the runtime proofs so a case is written once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
EXPECT = re.compile(r"#\s*expect(-above)?:\s*(TDV\d{3}(?:\s*,\s*TDV\d{3})*)\s*$")
HEADER = re.compile(r"^#\s*([\w-]+(?:\s+\d+)?):\s*(.*?)\s*$")


@dataclass(frozen=True)
class Case:
    path: Path
    expected: frozenset  # {(line, code)}
    headers: tuple  # ((key, value), ...) from the leading comment block

    @property
    def id(self) -> str:
        return str(self.path.relative_to(FIXTURES))

    def header(self, key: str) -> list[str]:
        return [value for k, value in self.headers if k == key]


def expected_of(text: str) -> frozenset:
    found = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            # ``# expect-above:`` marks the line before, for a line that cannot
            # hold a comment (one ending in a backslash continuation).
            where = number - 1 if match.group(1) else number
            found.update((where, code.strip()) for code in match.group(2).split(","))
    return frozenset(found)


def headers_of(text: str) -> tuple:
    pairs = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        match = HEADER.match(line)
        if match:
            pairs.append((match.group(1), match.group(2)))
    return tuple(pairs)


def all_cases() -> list[Case]:
    cases = []
    for path in sorted(FIXTURES.glob("TDV*/*.py")):
        text = path.read_text(encoding="utf-8")
        cases.append(Case(path, expected_of(text), headers_of(text)))
    return cases
