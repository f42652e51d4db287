"""What an imported function answers when it is handed a placed tensor.

``y = mask_non_mutations(y, seq)``, ``values = models.support_to_scalar(logits, n)``: a function of
another module of the project, whose code this file does not show, handed a placed tensor first. Its
answer, when it is a tensor, is most likely on that device; the flow believes it only where the code
itself treats the answer as a tensor, a ``.numpy()`` read of it (``Value.opaque``): never where it meets
another value, nor in a NumPy function or a plot, which take anything.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from ..._lazy import cst
from ...names import module_level_statements
from ..code import last_name
from .call_kinds import module_attribute
from .values import PLACED, Value

# What made an opaque answer: a method the flow does not read, or an imported helper. A helper may take a
# method's answer (``support_to_scalar(model.initial_inference(obs)[0], n)``) but not another helper's: each
# guess compounds (post-hoc: PyTorch-YOLOv3's ``rescale_boxes`` of what ``non_max_suppression`` copied to the host).
_METHOD, _HELPER = 1, 2

# Packages whose functions the flow reads by name (torch's, NumPy's) or that answer on the host.
_NOT_OPAQUE = frozenset({"torch", "numpy", "math", "builtins", "sklearn", "scipy", "pandas", "PIL", "cv2"})
# Names of helpers that answer on the host, or with an image or array (``to_data``, ``tensor2array``, ``to_img``);
# post-hoc, from the first version's held-out findings (docs/precision.md).
_HOST_WORDS = re.compile(r"(?i)cpu|numpy|np_|_np|host|array|image|img|^to_|2")


def opaque_result(names, call: "cst.Call", args: list) -> Optional[Value]:
    """The opaque placed answer of ``call`` (``args``: its ``(Arg, Value)`` pairs), or None: a function
    (not a class: ``DecodeBox(std, n)`` builds an object) imported at module level, or one of an imported
    module, whose name does not speak of the host, handed a placed tensor (not a module's attribute,
    ``odeint(model.ode.func, x, t)``) as its first positional argument: a placed value the code proves, or
    an unread method's answer."""
    func = call.func
    head = func.value if isinstance(func, cst.Attribute) else func
    name = last_name(func) or ""
    if not isinstance(head, cst.Name) or head.value not in _imported_names(names) \
            or _HOST_WORDS.search(name) or name[:1].isupper():
        return None
    first = args[0] if args else None
    if first is None or first[0].keyword is not None or first[0].star or first[1] is None \
            or first[1].kind != PLACED or first[1].guessed and first[1].opaque != _METHOD \
            or module_attribute(first[0].value):
        return None
    result = first[1].derived()
    result.guessed = True
    result.opaque = _HELPER
    return result


def opaque_answer(receiver: Value, method: str) -> Optional[Value]:
    """The opaque placed answer of a method the flow does not read, called on a placed value or a module
    moved in place (``model.initial_inference(obs)``, ``out.matmul(w)``): on the receiver's device when it is
    a tensor. Not a method whose name speaks of the host (``to_cpu``, ``as_numpy``)."""
    if _HOST_WORDS.search(method):
        return None
    result = receiver.derived(kind=PLACED)
    result.guessed = True
    result.opaque = _METHOD
    return result


def _imported_names(names) -> frozenset:
    """The names module code binds by importing from another package than those (``from vespag.utils import
    mask_non_mutations``, ``import models``): functions whose code this file does not show."""
    found = names.facts.get("imported_names")
    if found is None:
        bound = set()
        for statement in module_level_statements(names.module_body):
            if isinstance(statement, ast.Import):
                bound.update((alias.asname or alias.name).partition(".")[0] for alias in statement.names
                             if alias.name.partition(".")[0] not in _NOT_OPAQUE)
            elif isinstance(statement, ast.ImportFrom) and (
                statement.level or (statement.module or "").partition(".")[0] not in _NOT_OPAQUE
            ):
                bound.update(alias.asname or alias.name for alias in statement.names if alias.name != "*")
        found = names.facts["imported_names"] = frozenset(bound)
    return found
