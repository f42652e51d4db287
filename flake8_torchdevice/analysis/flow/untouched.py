"""Module-level layers that no code of the file moves: their CPU weights cross into the functions.

A layer module code builds (``model = nn.Linear(4, 2)``, ``net = Net()`` of a class that never moves)
holds its weights on the CPU until some code moves it, and any function may be that code
(``model.cuda()`` in ``setup()``), or may be handed it (``train(model)``). Where the whole file
binds the name once and otherwise only calls it (``model(x)``) or its methods that leave it where
it is (``model.eval()``, ``model.parameters()``, ``model.load_state_dict(state)``), no code moves
it: a function that feeds it a placed tensor meets CPU weights (the loop of
weiaicunzai/pytorch-cifar100's ``train()`` moving its images with ``.cuda()`` for a network module
code built and never moved). Read from the ``ast`` of the whole file, so the verdict does not depend
on which units the engine parses.
"""

from __future__ import annotations

import ast

# Methods of a module that neither move it nor hand it elsewhere.
STILL_METHODS = frozenset({
    "eval", "train", "forward", "parameters", "named_parameters", "buffers", "named_buffers", "modules",
    "named_modules", "children", "named_children", "state_dict", "load_state_dict", "zero_grad", "requires_grad_",
})


def untouched(names, candidates: set) -> set:
    """Those of ``candidates`` (module-level names bound to a CPU layer) that the file binds once and
    otherwise only calls, directly or through ``STILL_METHODS``."""
    if not candidates:
        return set()
    still: set = set()  # ids of the Name nodes of those calls
    uses: list = []
    for statement in names.module_body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and node.id in candidates:
                uses.append(node)
            elif isinstance(node, ast.Call):
                still.update(id(name) for name in _still_callee(node.func))
    bindings = dict.fromkeys(candidates, 0)
    touched = set()
    for use in uses:
        if isinstance(use.ctx, ast.Store):
            bindings[use.id] += 1
        elif id(use) not in still:
            touched.add(use.id)
    return {name for name in candidates if bindings[name] == 1 and name not in touched}


def _still_callee(func: ast.expr) -> list:
    """The module name a call leaves where it is: ``model`` of ``model(x)`` or ``model.eval()``."""
    if isinstance(func, ast.Name):
        return [func]
    if isinstance(func, ast.Attribute) and func.attr in STILL_METHODS and isinstance(func.value, ast.Name):
        return [func.value]
    return []
