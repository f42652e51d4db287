"""Local mirrors of public repositories (the search tool's ``fetch``), read by
``precision.py`` (user-code corpus) and ``recall.py`` (real-bug corpus)."""

from __future__ import annotations

import os
from pathlib import Path


def git_dir(repo: str) -> Path:
    """The git directory of ``owner/name``'s mirror under ``$TDV_MIRRORS`` (default /work/.mirror)."""
    top = Path(os.environ.get("TDV_MIRRORS", "/work/.mirror")) / repo.replace("/", "+") / "repo"
    return top / ".git" if (top / ".git").is_dir() else top
