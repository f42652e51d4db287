"""LibCST, imported on first use.

Importing LibCST takes ~0.25 s, longer than flake8 takes to start and check
a small file; most files meet no trigger and never need it. So the package
binds ``cst`` to a lazily loaded module (importlib's ``LazyLoader``): the
real import runs when an attribute is first read, and from then on ``cst``
is the plain module. Nothing here may read a ``cst`` attribute at import
time (module constants of node types are built on first use instead).
Before Python 3.12 a first access from two threads at once is unsafe; flake8
and our CLI check files in one thread per process.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """``sys.modules[name]`` if imported already, else a module that imports
    itself on first attribute access. It is registered in ``sys.modules`` so
    that the package's own submodule imports and other importers (another
    flake8 plugin) share the one copy."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


cst = lazy_module("libcst")
